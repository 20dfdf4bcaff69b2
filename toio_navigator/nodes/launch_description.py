"""The launch_ros description of a bringup profile, for the launch files in launch/ (``ros2 launch``).

Needs launch_ros, which only a ROS install has: nothing else in the package imports this module. What starts is
decided before anything starts (:func:`toio_navigator.launching.launch_plan.make_plan`: the arguments, the node
table of profiles.py, every parameter file checked by the nodes' rules); a plan that cannot start is an error of
the launch, with the reason, and no node runs. Then the nodes behave as under ``toio-nav bringup``:

* each dies with the launch, however the launch ends (even SIGKILL): it gets the launch's pid in
  :data:`~toio_navigator.lifecycle.PARENT_ENV` and asks the kernel for a SIGTERM when that process dies, on which
  it stops its cube as on any stop;
* a node that refuses to start (exit 2, a bad parameter) ends the whole launch, which logs that node's message.
"""
from __future__ import annotations

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler, Shutdown
from launch.event_handlers import OnProcessExit, OnProcessIO
from launch.logging import get_logger
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from toio_navigator.launching.launch_plan import LaunchError, NodeLaunch, launch_arguments, make_plan
from toio_navigator.launching.profiles import PACKAGE
from toio_navigator.lifecycle import PARENT_ENV, REFUSED


def launch_description(profile: str) -> LaunchDescription:
    """The LaunchDescription of a profile (launch/*.launch.py call this): its declared arguments (the table
    :data:`~toio_navigator.launching.launch_plan.LAUNCH_ARGUMENTS`) and the nodes they select."""
    arguments = [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description)
                 for a in launch_arguments(profile)]
    return LaunchDescription(arguments + [OpaqueFunction(function=_start, args=[profile])])


def _start(context, profile: str) -> list:
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in launch_arguments(profile)}
    plan = make_plan(profile, values, dict(context.launch_configurations))       # LaunchError: nothing started
    log = get_logger('launch')
    for warning in plan.warnings:
        log.warning(warning)
    if plan.rviz_config is not None:
        _require_rviz2()
    supervisor = {PARENT_ENV: str(os.getpid())}      # the launch process: its nodes die with it
    actions = []
    for node in plan.nodes:
        actions += _node_actions(node, supervisor)
    if plan.rviz_config is not None:
        actions.append(Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                            arguments=['-d', str(plan.rviz_config)]))
    return actions


def _node_actions(node: NodeLaunch, env: dict[str, str]) -> list:
    """The node, and the handlers that end the launch with its message if it refuses to start."""
    action = Node(package=PACKAGE, executable=node.executable, name=node.executable, namespace=node.namespace,
                  parameters=list(node.parameters), output='screen', additional_env=env)
    last_words = ['(it wrote nothing)']

    def heard(event) -> None:
        lines = [ln.strip() for ln in event.text.decode(errors='replace').splitlines() if ln.strip()]
        if lines:
            last_words[0] = lines[-1]

    def exited(event, _context):
        if event.returncode != REFUSED:
            return None             # a node that dies later is reported by launch; the others keep running
        reason = f'{node.name} refused to start: {last_words[0]}'
        get_logger('launch').error(f'{reason}; stopping every node of this launch')
        return [Shutdown(reason=reason)]

    return [action,
            RegisterEventHandler(OnProcessIO(target_action=action, on_stderr=heard)),
            RegisterEventHandler(OnProcessExit(target_action=action, on_exit=exited))]


def _require_rviz2() -> None:
    """rviz:=true needs rviz2: said before any node starts (launch_ros would fail after starting the others)."""
    # optional: only rviz:=true needs the ament index lookup of another package
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix  # noqa: PLC0415 see above

    try:
        get_package_prefix('rviz2')
    except PackageNotFoundError:
        raise LaunchError('rviz:=true, but rviz2 is not installed (no package rviz2 on AMENT_PREFIX_PATH '
                          f'{os.environ.get("AMENT_PREFIX_PATH", "")!r}): install ros-jazzy-rviz2, or leave '
                          'rviz:=false and start rviz2 where it is installed') from None
