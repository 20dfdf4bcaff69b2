"""Every node's parameters, one way: declared from a :class:`~toio_navigator.settings.spec.ParamSet`, checked by
its rules at start-up, and on every run-time change either applied or refused with the reason.

Each parameter gets a ParameterDescriptor with its description, its rule in ``additional_constraints``, its
range (FloatingPointRange / IntegerRange) where it has one, and ``read_only`` unless the node applies changes
while it runs, so ``ros2 param describe`` explains it. All are dynamically typed: YAML and ``ros2 param set``
write 20 and 20.0 alike, and a value of the wrong type gets the parameter's own message instead of rclpy's.
"""
from __future__ import annotations

import math
from typing import Callable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node

from toio_navigator.settings.spec import FLOAT, FLOATS, INT, INTS, Param, ParamSet, SettingError


def descriptor(p: Param) -> ParameterDescriptor:
    """The ROS descriptor of one parameter."""
    constraints = f'must be {p.rule}' + ('' if p.runtime else '; read-only: set it at start-up')
    d = ParameterDescriptor(name=p.name, description=p.description, additional_constraints=constraints,
                            read_only=not p.runtime, dynamic_typing=True)
    if p.kind in (INT, INTS) and p.low is not None and p.high is not None:
        d.integer_range = [IntegerRange(from_value=math.ceil(p.low), to_value=math.floor(p.high), step=1)]
    elif p.kind in (FLOAT, FLOATS) and (p.low is not None or p.high is not None):
        d.floating_point_range = [FloatingPointRange(
            from_value=-math.inf if p.low is None else float(p.low),
            to_value=math.inf if p.high is None else float(p.high), step=0.0)]
    return d


class NodeParameters:
    """A node's declared parameters and their current checked values (``values``, by name).

    Declaring reads each value (the override or the default) with an open descriptor, checks it by its rule
    (SettingError naming the parameter), and only then gives it its full descriptor: so a bad start-up value
    gets the parameter's own message, not rclpy's range message."""

    def __init__(self, node: Node, params: ParamSet) -> None:
        self.node, self.params = node, params
        self.values: dict[str, object] = {}
        for p in params:
            raw = node.declare_parameter(p.name, p.ros_default(), ParameterDescriptor(dynamic_typing=True)).value
            self.values[p.name] = p.check(raw)
            node.set_descriptor(p.name, descriptor(p))

    def on_change(self, apply: Callable[[dict[str, object], set[str]], None]) -> None:
        """Run-time changes: checked by their rules, then ``apply(values with the changes, changed names)``,
        which puts them into effect or raises SettingError without changing anything (refused with the reason).
        A read-only parameter is refused by rclpy before this runs."""
        def callback(changes) -> SetParametersResult:
            ours = {c.name: c.value for c in changes if c.name in self.params}
            if not ours:
                return SetParametersResult(successful=True)
            try:
                merged = self.params.merge(self.values, ours)
                apply(merged, set(ours))
            except SettingError as exc:
                self.node.get_logger().warning(f'parameter change refused: {exc}')
                return SetParametersResult(successful=False, reason=str(exc))
            self.values = merged
            self.node.get_logger().info('parameters changed: ' +
                                        ', '.join(f'{n}={merged[n]!r}' for n in sorted(ours)))
            return SetParametersResult(successful=True)
        self.node.add_on_set_parameters_callback(callback)
