"""The web console node: the swarm, its goals and the arena in a browser, and the page's commands sent through the
same interfaces as everyone else's.

In (while a page is open): ``<cube>/state``, ``<cube>/nav_result``, ``<cube>/link_state``, ``mat_sim/contacts``,
``arena/map``, ``arena/state``, ``arena/fastest_path``, ``/parameter_events`` (the navigator's planner and mode,
the explorer's waypoint); the navigator's ``mat_rect``, ``border``, ``walls``, ... through its get_parameters
service. Out, on a page's request: goals and stops through ``navigator/set_goal``, ``planner`` / ``mode`` through
the navigator's set_parameters service, ``arena_explorer/{start_exploration, start_fastest_path, terminate,
set_waypoint}``. Each answer, a refusal's reason included, goes back to the page that asked.

This module only translates: the view, the message meanings, the command checks and the server are the ROS-free
:mod:`toio_navigator.web`. The server runs in a thread of its own; commands reach ROS through a queue the node's
timer drains, so every ROS call is made on the node's executor. With no page open the node holds no subscription,
so it costs its machine next to nothing (docs/web_console.md).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import sys
import time
from pathlib import Path

from nav_msgs.msg import OccupancyGrid
from nav_msgs.msg import Path as PathMsg
from rcl_interfaces.msg import Parameter, ParameterEvent, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.exceptions import ParameterException
from rclpy.parameter import parameter_value_to_python
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_srvs.srv import Trigger

from toio_navigator.msg import ArenaState, ContactEvent, CubeState, LinkStatus, NavGoal, NavResult
from toio_navigator.nodes.lean_node import LeanNode
from toio_navigator.nodes.parameters import NodeParameters
from toio_navigator.nodes.qos import LATCHED, STATE_QOS
from toio_navigator.nodes.spin import run_node
from toio_navigator.settings.spec import SettingError
from toio_navigator.settings.web_console import PARAMS, web_settings
from toio_navigator.srv import SetGoal, SetWaypoint
from toio_navigator.web.commands import LIVE_OPS, Command
from toio_navigator.web.feed import Feed, topics
from toio_navigator.web.server import ConsoleServer, ServerError, lab_addresses, write_address
from toio_navigator.web.view import ViewState

_TYPES = {'CubeState': (CubeState, qos_profile_sensor_data), 'NavResult': (NavResult, 10),
          'LinkStatus': (LinkStatus, LATCHED), 'ContactEvent': (ContactEvent, QoSProfile(
              depth=100, reliability=ReliabilityPolicy.RELIABLE)),
          'OccupancyGrid': (OccupancyGrid, LATCHED), 'ArenaState': (ArenaState, STATE_QOS), 'Path': (PathMsg, LATCHED)}
#: what the page shows of the navigator's parameters
NAVIGATOR_SHOWN = ('mat_rect', 'border', 'walls', 'mode', 'planner', 'max_speed', 'tolerance')
#: what the page shows of the explorer's parameters (its services' presence shows the arena panel)
EXPLORER_SHOWN = ('waypoint', 'arena_origin_x', 'arena_origin_y', 'arena_cell_size')
#: goal ids of the console's goals (NavResult.goal_id shows them): apart from callers' small ids and pose goals'
FIRST_GOAL_ID = 1 << 29
#: a page that closed keeps the subscriptions this long (a reload should not lose the latched arena)
UNSUBSCRIBE_AFTER_S = 30.0


class WebConsoleNode(LeanNode):
    def __init__(self, **kwargs) -> None:
        super().__init__('web_console', **kwargs)
        self.parameters = NodeParameters(self, PARAMS)
        s = self.settings = web_settings(self.parameters.values)
        self.view = ViewState(s.cubes, s.stale_s, s.lost_s)
        self.feed = Feed()
        self.commands: queue.SimpleQueue = queue.SimpleQueue()
        self.goal_id = FIRST_GOAL_ID
        self._subs: list = []
        self.last_page = -1e9
        self.asked: dict[str, object] = {}          # node -> its get_parameters future
        self.set_goal = self.create_client(SetGoal, 'navigator/set_goal')
        self.nav_get = self.create_client(GetParameters, f'/{s.navigator}/get_parameters')
        self.nav_set = self.create_client(SetParameters, f'/{s.navigator}/set_parameters')
        self.ex_get = self.create_client(GetParameters, f'/{s.explorer}/get_parameters')
        self.triggers = {a: self.create_client(Trigger, f'{s.explorer}/{a}')
                         for a in ('start_exploration', 'start_fastest_path', 'terminate')}
        self.waypoint = self.create_client(SetWaypoint, f'{s.explorer}/set_waypoint')
        self.server = ConsoleServer(self._snapshot, self._handle, {'kind': 'live', 'cubes': list(s.cubes)},
                                    s.cubes, LIVE_OPS, s.host, s.port, s.rate_hz)
        try:
            self.server.start()
        except ServerError as exc:
            raise SettingError('port', str(exc)) from None
        self.create_timer(0.05, self._tick)
        self._announce(s.address_file)

    def _announce(self, address_file: str) -> None:
        url = self.server.url()
        if self.settings.lab_network:
            others = [self.server.url(a) for a in lab_addresses()]
            self.get_logger().warning(
                f'web console: serving the lab network on every interface, port {self.server.port}: '
                f'{", ".join(others) or url} (anyone who reaches this machine can open the page and send goals)')
        else:
            self.get_logger().info(f'web console: {url} (this machine only; lab_network:=true serves the network)')
        if address_file:
            write_address(Path(address_file), url)

    # ------------------------------------------------------------------------------------------- the view
    def _snapshot(self) -> dict:
        self.last_page = time.monotonic()
        return self.view.snapshot(time.monotonic())

    def _on(self, topic: str, msg) -> None:
        try:
            events = self.feed.events(topic, msg)
        except (AttributeError, TypeError, ValueError, IndexError) as exc:     # a message of another shape
            self.get_logger().warning(f'{topic}: message not shown: {exc}', throttle_duration_sec=10.0)
            return
        self.view.feed(time.monotonic(), events)

    def _subscribe(self) -> None:
        for topic, kind in topics(self.settings.cubes).items():
            cls, qos = _TYPES[kind.rsplit('/', 1)[1]]
            self._subs.append(self.create_subscription(cls, topic, lambda m, t=topic: self._on(t, m), qos))
        self._subs.append(self.create_subscription(ParameterEvent, '/parameter_events',
                                                            self._on_parameter_event, 10))

    def _unsubscribe(self) -> None:
        while self._subs:
            self.destroy_subscription(self._subs.pop())

    def _on_parameter_event(self, msg) -> None:
        values = {p.name: parameter_value_to_python(p.value) for p in list(msg.new_parameters) +
                  list(msg.changed_parameters)}
        if msg.node == f'/{self.settings.navigator}':
            self.view.feed(time.monotonic(), [('navigator_parameters', (values,))])
        elif msg.node == f'/{self.settings.explorer}' and 'waypoint' in values:
            self.view.feed(time.monotonic(), [('arena_waypoint', (_waypoint(values['waypoint']),))])

    def _tick(self) -> None:
        now = time.monotonic()
        if self.server.clients and not self._subs:
            self._subscribe()
        elif not self.server.clients and self._subs and now - self.last_page > UNSUBSCRIBE_AFTER_S:
            self._unsubscribe()
        online = self.set_goal.service_is_ready()
        if online != self.view.nav.online:
            self.view.feed(now, [('navigator_online', (online,))])
        if online and not self.view.nav.parameters_known:
            self._ask(self.nav_get, NAVIGATOR_SHOWN, lambda v: [('navigator_parameters', (v,))])
        if self.ex_get.service_is_ready() and 'explorer' not in self.asked:
            self._ask(self.ex_get, EXPLORER_SHOWN, _explorer_events, 'explorer')
        while not self.commands.empty():
            command, future = self.commands.get()
            self._carry_out(command, future)

    def _ask(self, client, names, to_events, key: str = 'navigator') -> None:
        if key in self.asked and not self.asked[key].done():
            return
        future = self.asked[key] = client.call_async(GetParameters.Request(names=list(names)))

        def answered(f) -> None:
            answer = f.result()
            if answer is not None and len(answer.values) == len(names):
                values = {n: parameter_value_to_python(v) for n, v in zip(names, answer.values)}
                self.view.feed(time.monotonic(), to_events(values))
        future.add_done_callback(answered)

    # ------------------------------------------------------------------------------------------- commands
    async def _handle(self, command: Command) -> tuple[bool, str]:
        """(in the server's thread) queue the command for the node's thread; its answer when it comes"""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.commands.put((command, future))
        return await asyncio.wrap_future(future)

    def _answer(self, future, ok: bool, text: str, cube: str = '', reason: str = '') -> None:
        self.view.feed(time.monotonic(), [('note', (ok, text, cube, reason))])
        if not future.done():
            future.set_result((ok, text))

    def _call(self, client, request, what: str, future, on_answer) -> None:
        """``client``'s answer to ``request`` through ``on_answer(answer) -> (ok, text[, cube])``."""
        if not client.service_is_ready():
            self._answer(future, False, f'{what}: not available ({client.srv_name} has no server)')
            return
        call = client.call_async(request)
        call.add_done_callback(lambda f: self._answer(future, *on_answer(f.result())))

    def _carry_out(self, command: Command, future) -> None:
        op = command.op
        if op in ('goal', 'stop'):
            self._goal(command.cube, command, future)
        elif op == 'stop_all':
            self._stop_all(future)
        elif op == 'set_parameter':
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=command.value)
            request = SetParameters.Request(parameters=[Parameter(name=command.name, value=value)])
            self._call(self.nav_set, request, f'{command.name} {command.value}', future, lambda a: (
                a.results[0].successful, f'{command.name} set to {command.value}' if a.results[0].successful else
                f'{command.name} {command.value} refused: {a.results[0].reason}'))
        elif op == 'explorer':
            self._call(self.triggers[command.name], Trigger.Request(), command.name.replace('_', ' '), future,
                       lambda a: (a.success, f'{command.name.replace("_", " ")}: {a.message}'))
        elif op == 'waypoint':
            request = SetWaypoint.Request(x=int(command.x), y=int(command.y))
            self._call(self.waypoint, request, 'set waypoint', future, lambda a: (a.success, a.message))

    def _goal_request(self, cube: str, command: Command | None) -> SetGoal.Request:
        self.goal_id += 1
        goal = NavGoal(goal_id=self.goal_id, cube=cube, direction=NavGoal.STOP)
        if command is not None and command.op == 'goal':
            goal.direction, goal.x, goal.y = NavGoal.TOWARDS, command.x, command.y
        return SetGoal.Request(goal=goal)

    def _goal(self, cube: str, command: Command, future) -> None:
        what = f'{cube}: goal ({command.x:.0f}, {command.y:.0f})' if command.op == 'goal' else f'{cube}: stop'
        self._call(self.set_goal, self._goal_request(cube, command), what, future, lambda a: (
            a.accepted, f'{what} accepted' if a.accepted else f'{what} refused: {a.reason}', cube, a.reason))

    def _stop_all(self, future) -> None:
        if not self.set_goal.service_is_ready():
            self._answer(future, False, 'stop all: the navigator (navigator/set_goal) is not available')
            return
        cubes = list(self.settings.cubes)
        calls = [self.set_goal.call_async(self._goal_request(c, None)) for c in cubes]
        left = [len(calls)]

        def one_done(_f) -> None:
            left[0] -= 1
            if left[0]:
                return
            refused = [f'{c}: {f.result().reason}' for c, f in zip(cubes, calls) if not f.result().accepted]
            self._answer(future, not refused, f'stop sent to {len(cubes) - len(refused)} of {len(cubes)} cubes'
                         + (f'; refused: {"; ".join(refused)}' if refused else ''))
        for call in calls:
            call.add_done_callback(one_done)

    def destroy_node(self) -> None:
        self.server.stop()
        super().destroy_node()


def _explorer_events(values: dict) -> list:
    mapping = tuple(float(values[k]) for k in EXPLORER_SHOWN[1:])
    return [('arena_parameters', (_waypoint(values.get('waypoint')), mapping))]


def _waypoint(value):
    v = list(value) if isinstance(value, (list, tuple)) else []
    return (int(v[0]), int(v[1])) if len(v) == 2 and v[0] >= 0 and v[1] >= 0 else None


def main(args: list[str] | None = None) -> int:
    """``ros2 run toio_navigator web_console [--ros-args ...]``. Exit 2 on bad parameters or a port in use."""
    return run_node('web_console', WebConsoleNode, errors=(SettingError, ParameterException), args=args)


if __name__ == '__main__':
    sys.exit(main())
