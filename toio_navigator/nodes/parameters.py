"""Every node's parameters, one way: declared from a :class:`~toio_navigator.settings.spec.ParamSet`, checked by
its rules at start-up, and on every run-time change either applied or refused with the reason.

Each parameter gets a ParameterDescriptor with its description, its rule in ``additional_constraints``, its
range (FloatingPointRange / IntegerRange) where it has one, and ``read_only`` unless the node applies changes
while it runs, so ``ros2 param describe`` explains it. All are dynamically typed: YAML and ``ros2 param set``
write 20 and 20.0 alike, and a value of the wrong type gets the parameter's own message instead of rclpy's. A
value its rule accepts is stored as the parameter's own type (``ros2 param set /navigator rate_hz 10`` stores
10.0, which ``ros2 param get`` shows as a double), and a refused one leaves the type ``ros2 param describe`` shows
as it was.
"""
from __future__ import annotations

import math
from typing import Callable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from toio_navigator.settings.spec import (
    BOOL,
    FLOAT,
    FLOATS,
    INT,
    INTS,
    NAME,
    STR,
    STRINGS,
    Param,
    ParamSet,
    SettingError,
)

_TYPE = {BOOL: Parameter.Type.BOOL, INT: Parameter.Type.INTEGER, FLOAT: Parameter.Type.DOUBLE,
         STR: Parameter.Type.STRING, NAME: Parameter.Type.STRING, STRINGS: Parameter.Type.STRING_ARRAY,
         FLOATS: Parameter.Type.DOUBLE_ARRAY, INTS: Parameter.Type.INTEGER_ARRAY}


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
            declared = node.declare_parameter(p.name, p.ros_default(), ParameterDescriptor(dynamic_typing=True))
            self.values[p.name] = p.check(declared.value)
            typed = typed_parameter(p, self.values[p.name])
            if typed is not None and typed.type_ != declared.type_:        # YAML's `rate_hz: 20` is stored as 20.0
                node.set_parameters([typed])
            node.set_descriptor(p.name, descriptor(p))
        node.add_pre_set_parameters_callback(self._typed)

    def _typed(self, changes: list[Parameter]) -> list[Parameter]:
        """Each change its rule accepts, as the parameter's own type (rclpy calls this before it checks)."""
        out = []
        for change in changes:
            p = self.params.get(change.name)
            try:
                typed = typed_parameter(p, p.check(change.value)) if p is not None else None
            except SettingError:
                typed = None                    # refused with the parameter's own message by on_change
            out.append(typed if typed is not None and typed.type_ != change.type_ else change)
        return out

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
                for name in ours:
                    # rclpy gave the stored descriptor the refused value's type before asking us
                    self.node.describe_parameter(name).type = self.node.get_parameter(name).type_.value
                self.node.get_logger().warning(f'parameter change refused: {exc}')
                return SetParametersResult(successful=False, reason=str(exc))
            self.values = merged
            self.node.get_logger().info('parameters changed: ' +
                                        ', '.join(f'{n}={merged[n]!r}' for n in sorted(ours)))
            return SetParametersResult(successful=True)
        self.node.add_on_set_parameters_callback(callback)


def typed_parameter(p: Param, value) -> Parameter | None:
    """A checked value as a Parameter of ``p``'s own ROS type (lists as lists); None for a kind of no single ROS
    type (TEXTS: a string or a list of strings), which keeps the type it was given."""
    kind = _TYPE.get(p.kind)
    return None if kind is None else Parameter(p.name, kind, list(value) if isinstance(value, tuple) else value)
