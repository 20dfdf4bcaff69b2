"""The rviz2 configuration of a bringup, generated for its cubes: ``toio-nav rviz-config``.

What it shows, all in the fixed frame ``mat`` (REP 103: metres, y up; the mat's top-left corner at the origin):
a grid over the mat, the navigator's markers (cubes, margins, waypoints, goals, scan rays, walls), TF (every
cube's ``<cube>/base_link`` and the ``map`` frame), one Pose display per cube (``<cube>/pose``), mat_sim's ground
truth (simulated profiles), the arena explorer's map and fastest path (arena profile), and one "2D Goal Pose" tool
per cube that publishes to ``<cube>/goal_pose`` (the Tool Properties panel shows which tool drives which cube).

``DISPLAY_TYPES`` names the message type each display and tool class reads or writes; test/nodes/test_rviz_config.py
runs each profile's bringup and checks every topic of the generated file against the live graph with it.
The files in config/ (``launching.profiles.rviz_file``) are its output for the profiles' own YAML (``--check``
says whether they are current). No ROS import: this writes YAML.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from toio_navigator.launching import profiles
from toio_navigator.units import FRAME_ID

#: display / tool class -> the message type on its topic (TF reads /tf and /tf_static)
DISPLAY_TYPES = {
    'rviz_default_plugins/MarkerArray': 'visualization_msgs/msg/MarkerArray',
    'rviz_default_plugins/Pose': 'geometry_msgs/msg/PoseStamped',
    'rviz_default_plugins/PoseArray': 'geometry_msgs/msg/PoseArray',
    'rviz_default_plugins/Map': 'nav_msgs/msg/OccupancyGrid',
    'rviz_default_plugins/Path': 'nav_msgs/msg/Path',
    'rviz_default_plugins/TF': 'tf2_msgs/msg/TFMessage',
    'rviz_default_plugins/SetGoal': 'geometry_msgs/msg/PoseStamped',
}
TF_TOPICS = ('/tf', '/tf_static')
#: the mat's centre in frame mat (metres): the collection mat spans units 45..455 (0.06..0.62 m)
_CENTRE = (0.34, -0.34)
_SIM_PROFILES = ('sim', 'arena')


def _topic(name: str, depth: int = 5, reliable: bool = True, latched: bool = False) -> dict:
    return {'Value': name, 'Depth': depth, 'History Policy': 'Keep Last',
            'Reliability Policy': 'Reliable' if reliable else 'Best Effort',
            'Durability Policy': 'Transient Local' if latched else 'Volatile'}


def displays(profile: str, cubes: list[str], frame: str = FRAME_ID) -> list[dict]:
    """The Displays list of a profile with these cubes."""
    out = [
        {'Class': 'rviz_default_plugins/Grid', 'Name': 'Grid (5 cm)', 'Enabled': True, 'Reference Frame': frame,
         'Cell Size': 0.05, 'Plane Cell Count': 14, 'Offset': {'X': _CENTRE[0], 'Y': _CENTRE[1], 'Z': 0},
         'Color': '160; 160; 164', 'Alpha': 0.3},
        {'Class': 'rviz_default_plugins/MarkerArray', 'Name': 'navigator markers', 'Enabled': True,
         'Topic': _topic('/navigator/markers', depth=10),
         'Namespaces': {ns: True for ns in ('cubes', 'names', 'margins', 'waypoints', 'goals', 'scan_rays',
                                            'walls', 'mat')}},
        {'Class': 'rviz_default_plugins/TF', 'Name': 'TF', 'Enabled': True, 'Show Names': True, 'Show Axes': True,
         'Show Arrows': False, 'Marker Scale': 0.15, 'Update Interval': 0, 'Frame Timeout': 5},
    ]
    if profile == 'arena':
        out += [
            {'Class': 'rviz_default_plugins/Map', 'Name': 'arena map (explorer belief)', 'Enabled': True,
             'Alpha': 0.6, 'Color Scheme': 'map', 'Draw Behind': True,
             'Topic': _topic('/arena/map', depth=1, latched=True)},
            {'Class': 'rviz_default_plugins/Path', 'Name': 'fastest path', 'Enabled': True, 'Color': '25; 255; 0',
             'Line Style': 'Billboards', 'Line Width': 0.004, 'Alpha': 1,
             'Topic': _topic('/arena/fastest_path', depth=1, latched=True)},
        ]
    if profile in _SIM_PROFILES:
        out.append({'Class': 'rviz_default_plugins/PoseArray', 'Name': 'ground truth (mat_sim)', 'Enabled': True,
                    'Shape': 'Arrow (Flat)', 'Color': '255; 25; 0', 'Alpha': 0.6, 'Arrow Length': 0.03,
                    'Topic': _topic('/mat_sim/ground_truth', reliable=False)})
    for cube in cubes:
        out.append({'Class': 'rviz_default_plugins/Pose', 'Name': f'{cube} pose', 'Enabled': True,
                    'Shape': 'Arrow', 'Color': '25; 255; 0', 'Alpha': 1, 'Shaft Length': 0.03,
                    'Shaft Radius': 0.003, 'Head Length': 0.01, 'Head Radius': 0.008, 'Buffer Length': 1,
                    'Topic': {**_topic(f'/{cube}/pose'), 'Filter size': 10}})
    return out


def config(profile: str, cubes: list[str], frame: str = FRAME_ID) -> dict:
    """The whole rviz2 configuration as a mapping."""
    tools = [{'Class': 'rviz_default_plugins/MoveCamera'}, {'Class': 'rviz_default_plugins/Select'},
             {'Class': 'rviz_default_plugins/Measure'}]
    tools += [{'Class': 'rviz_default_plugins/SetGoal', 'Topic': _topic(f'/{cube}/goal_pose', depth=1)}
              for cube in cubes]
    return {
        'Panels': [{'Class': 'rviz_common/Displays', 'Name': 'Displays'},
                   {'Class': 'rviz_common/Tool Properties', 'Name': 'Tool Properties'},
                   {'Class': 'rviz_common/Views', 'Name': 'Views'}],
        'Visualization Manager': {
            'Class': '', 'Displays': displays(profile, cubes, frame), 'Enabled': True,
            'Global Options': {'Background Color': '48; 48; 48', 'Fixed Frame': frame, 'Frame Rate': 30},
            'Name': 'root', 'Tools': tools, 'Value': True,
            'Views': {'Current': {'Class': 'rviz_default_plugins/TopDownOrtho', 'Name': 'Current View',
                                  'X': _CENTRE[0], 'Y': _CENTRE[1], 'Scale': 1200, 'Angle': 0,
                                  'Near Clip Distance': 0.01, 'Target Frame': '<Fixed Frame>',
                                  'Value': 'TopDownOrtho (rviz_default_plugins)'},
                      'Saved': None}},
        'Window Geometry': {'Height': 900, 'Width': 1400},
    }


def render(profile: str, cubes: list[str], source: str = '') -> str:
    """The .rviz file text (YAML with a header saying what it is and how it was made)."""
    head = (f'# rviz2 configuration of the {profile} bringup for cubes {", ".join(cubes)} (frame mat: metres, y up;\n'
            f'# the mat\'s top-left corner at the origin). Generated by `toio-nav rviz-config --profile {profile}'
            f'{" --params-file " + source if source else ""}`: do not edit, regenerate.\n'
            '# "2D Goal Pose" tools (one per cube, see Tool Properties) publish <cube>/goal_pose.\n')
    return head + yaml.safe_dump(config(profile, cubes), sort_keys=False, default_flow_style=False, width=120)


def topics(text: str) -> list[tuple[str, str, str]]:
    """(class, topic, message type) of every display and tool of an .rviz file that has a topic, TF's two
    topics included; ValueError for a class whose type is unknown here."""
    data = yaml.safe_load(text)
    manager = data['Visualization Manager']
    out = []
    for item in list(manager.get('Displays', [])) + list(manager.get('Tools', [])):
        cls = item['Class']
        if cls == 'rviz_default_plugins/TF':
            out += [(cls, t, DISPLAY_TYPES[cls]) for t in TF_TOPICS]
        elif 'Topic' in item:
            if cls not in DISPLAY_TYPES:
                raise ValueError(f'{cls}: no known message type')
            out.append((cls, item['Topic']['Value'], DISPLAY_TYPES[cls]))
    return out


# ------------------------------------------------------------------------------------------------ CLI

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--profile', choices=profiles.PROFILES, default='sim',
                        help='which bringup: sim and arena add mat_sim\'s ground truth, arena the map and path')
    parser.add_argument('--params-file', action='append', type=Path, default=None, metavar='YAML',
                        help='parameter files with the `cubes` list (repeatable); default: the profile\'s own')
    parser.add_argument('-o', '--out', type=Path, default=None,
                        help='write here (default: standard output)')
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if the profile\'s file in config/ is not what would be generated')


def run(args: argparse.Namespace) -> int:
    try:
        files = [p.resolve() for p in args.params_file] if args.params_file else profiles.profile_files(args.profile)
        cubes = profiles.read_cubes(files)
    except profiles.BringupError as exc:
        print(f'rviz-config: {exc}', file=sys.stderr)
        return 2
    text = render(args.profile, cubes, " ".join(p.name for p in args.params_file or ()))
    if args.check:
        path = profiles.config_dir() / profiles.rviz_file(args.profile)
        if not path.is_file() or path.read_text() != text:
            print(f'rviz-config: {path} is not current: toio-nav rviz-config --profile {args.profile} -o {path}',
                  file=sys.stderr)
            return 1
        return 0
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text)
    except OSError as exc:
        print(f'rviz-config: cannot write {args.out}: {exc.strerror}', file=sys.stderr)
        return 2
    return 0
