"""The web console in a real browser (the distribution's headless Chromium, driven by Playwright) beside the simulated
bringup (mat_sim with 8 cubes, a cube_driver each, the navigator, the web console; one process per node, real DDS):

* the page draws the 8 cubes where mat_sim's ground truth has them, within 3 mm;
* a click on a cube and then on the mat sends that cube there through the navigator, and it arrives;
* a click off the mat shows the navigator's refusal, with its reason, and the cube stays where it is.

Screenshots: out/web/sim_*.png. Without Chromium or Playwright the tests are skipped, saying how to install them.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from support.browser import MISSING

if MISSING:
    pytest.skip(MISSING, allow_module_level=True)
rclpy = pytest.importorskip('rclpy')
pytest.importorskip('toio_navigator.msg')

from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from conftest import navigator_setting, next_domain_id, ros_env  # noqa: E402
from support.browser import Browser, drawn_cubes, page_point, shot, wait_for  # noqa: E402
from support.goal_probe import start_nodes, write_params  # noqa: E402
from toio_navigator import units  # noqa: E402
from toio_navigator.launching import profiles  # noqa: E402

CUBES = [f'cube{i}' for i in range(1, 9)]
MM_PER_UNIT = units.METRES_PER_UNIT * 1000.0


class Console:
    """The sim bringup with the web console, a probe on mat_sim's ground truth, and the page in a browser."""

    def __init__(self, tmp: Path) -> None:
        env = ros_env(next_domain_id())
        address = tmp / 'address.txt'
        files = profiles.profile_files('sim') + write_params(
            tmp / 'web.yaml', f'web_console:\n  ros__parameters:\n    port: 0\n    address_file: "{address}"\n')[1:]
        self.probe = start_nodes(tmp, env, profiles.plan('sim', CUBES, web=True), files, 'web_probe')
        self.truth: dict[str, np.ndarray] = {}
        self.probe.node.create_subscription(PoseArray, 'mat_sim/ground_truth', self._on_truth,
                                            qos_profile_sensor_data)
        self.probe.spin_until(address.exists, 60.0, 'the web console\'s address')
        self.browser = Browser()
        self.page = self.browser.page(address.read_text().strip())
        wait_for(self.page, f'window.toioConsole.view && window.toioConsole.view.cubes.filter(c => c.health === "ok")'
                            f'.length === {len(CUBES)} && window.toioConsole.view.navigator.parameters_known', 90.0,
                 'every cube live and the navigator\'s parameters')

    def _on_truth(self, msg) -> None:
        for cube, p in zip(CUBES, msg.poses):
            self.truth[cube] = np.array(units.ros_to_mat_xy(p.position.x, p.position.y))

    def fresh_truth(self) -> dict[str, np.ndarray]:
        self.truth = {}
        self.probe.spin_until(lambda: len(self.truth) == len(CUBES), 10.0, 'ground truth')
        return dict(self.truth)

    def click(self, x: float, y: float) -> None:
        self.page.mouse.click(*page_point(self.page, x, y))

    def close(self) -> None:
        try:
            assert not self.browser.errors, f'the page raised: {self.browser.errors}'
        finally:
            self.browser.close()
            self.probe.close()


@pytest.fixture(scope='module')
def console(tmp_path_factory):
    c = Console(tmp_path_factory.mktemp('web_sim'))
    yield c
    c.close()


def test_the_page_draws_the_eight_cubes_where_mat_sim_has_them(console):
    before = console.fresh_truth()
    drawn = drawn_cubes(console.page)
    after = console.fresh_truth()
    shot(console.page, 'sim_cubes')
    assert sorted(drawn) == sorted(CUBES)
    for cube in CUBES:
        assert np.hypot(*(after[cube] - before[cube])) < 0.5, f'{cube} moved while it had no goal'
        error_mm = np.hypot(*(np.array(drawn[cube]) - after[cube])) * MM_PER_UNIT
        assert error_mm < 3.0, f'{cube} drawn {error_mm:.1f} mm from where mat_sim has it'


def test_a_click_on_the_mat_sends_the_selected_cube_there_and_it_arrives(console):
    target = np.array([250.0, 250.0])
    start = console.fresh_truth()['cube3']
    console.click(*start)                                  # select cube3
    wait_for(console.page, 'document.querySelector(\'tr[data-cube="cube3"]\').classList.contains("selected")',
             5.0, 'cube3 selected')
    console.click(*target)
    text = wait_for(console.page, 'window.toioConsole.replies.length && window.toioConsole.replies.at(-1).text', 10.0,
                    'the navigator\'s answer')
    assert text.startswith('cube3: goal (') and text.endswith(') accepted'), text
    goal = wait_for(console.page, 'window.toioConsole.view.cubes[2].goal', 5.0, 'the accepted goal')
    assert np.hypot(goal[0] - target[0], goal[1] - target[1]) < 1.0           # where the click was, within 1.4 mm
    wait_for(console.page, 'window.toioConsole.view.cubes[2].status === "reached"', 45.0, 'cube3 reached')
    tolerance = navigator_setting('tolerance')        # the navigator's "reached" radius of a set_goal goal
    console.probe.spin_until(lambda: 'cube3' in console.truth and np.hypot(*(console.truth['cube3'] - target))
                             <= tolerance, 20.0, 'cube3 within the navigator\'s tolerance of the click')
    assert np.hypot(*(console.truth['cube3'] - start)) > 150.0
    shot(console.page, 'sim_goal_reached')


def test_a_click_off_the_mat_shows_the_navigators_refusal_and_nothing_moves(console):
    before = console.fresh_truth()['cube1']
    console.click(*before)                                 # select cube1
    wait_for(console.page, 'document.querySelector(\'tr[data-cube="cube1"]\').classList.contains("selected")',
             5.0, 'cube1 selected')
    x0 = navigator_setting('mat_rect')[0]
    console.click(x0 - 25.0, 250.0)                        # in the margin drawn left of the mat
    note = wait_for(console.page, 'document.querySelector("#note.refused") && '
                                  'document.querySelector("#note").textContent', 10.0, 'the refusal')
    assert 'cube1: goal' in note and 'refused' in note and 'off the mat' in note, note
    wait_for(console.page, 'document.querySelector("#refused-mark")', 5.0, 'the refused point marked on the page')
    status = console.page.inner_text('tr[data-cube="cube1"] td.status')
    assert status.startswith('refused: ') and 'off the mat' in status, status
    shot(console.page, 'sim_off_mat_refused')
    time.sleep(1.0)
    assert np.hypot(*(console.fresh_truth()['cube1'] - before)) < 0.5


def test_the_planner_and_mode_are_switched_from_the_page_and_stop_all_reaches_every_cube(console):
    page = console.page
    before = len(page.evaluate('window.toioConsole.replies'))
    page.select_option('#planner', 'orca')
    reply = wait_for(page, f'window.toioConsole.replies.length > {before} && window.toioConsole.replies.at(-1)',
                     10.0, 'the navigator\'s answer')
    assert reply['ok'] and reply['text'] == 'planner set to orca', reply
    wait_for(page, 'window.toioConsole.view.navigator.planner === "orca"', 10.0, 'the navigator ticking with orca')
    page.select_option('#mode', 'BOIDS_AVOID')
    wait_for(page, 'window.toioConsole.view.navigator.mode === "BOIDS_AVOID"', 10.0, 'mode BOIDS_AVOID')
    # a value no select offers is still the navigator's to refuse, and the page shows its reason
    page.evaluate('window.toioConsole.send({op: "set_parameter", name: "planner", value: "warp"})')
    reply = wait_for(page, 'window.toioConsole.replies.at(-1).command.value === "warp" && '
                           'window.toioConsole.replies.at(-1)', 10.0, 'the refusal')
    assert not reply['ok'] and 'planner warp refused: ' in reply['text'] and 'hlavoid' in reply['text'], reply
    for name, value in (('planner', 'hlavoid'), ('mode', 'AVOID')):
        page.select_option(f'#{name}', value)
        wait_for(page, f'window.toioConsole.view.navigator.{name} === "{value}"', 10.0, f'{name} {value}')
    page.click('#stop-all')
    reply = wait_for(page, 'window.toioConsole.replies.at(-1).command.op === "stop_all" && '
                           'window.toioConsole.replies.at(-1)', 10.0, 'the stops\' answers')
    assert reply['ok'] and reply['text'] == f'stop sent to {len(CUBES)} of {len(CUBES)} cubes', reply
    wait_for(page, 'window.toioConsole.view.cubes.every(c => c.status === "stopped")', 10.0, 'every cube stopped')
    shot(page, 'sim_stopped')
