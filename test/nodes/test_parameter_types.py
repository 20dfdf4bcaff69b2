"""Every node parameter is stored as its own ROS type: a checked value becomes a Parameter of the type its kind
has (a double for a float, even when 10 was given), and a kind of no single type keeps what it was given."""
from __future__ import annotations

import pytest

pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402

from toio_navigator.nodes.parameters import typed_parameter  # noqa: E402
from toio_navigator.settings.bringup_params import NODE_PARAMS  # noqa: E402
from toio_navigator.settings.spec import FLOAT, FLOATS, TEXTS, Param  # noqa: E402


@pytest.mark.parametrize('node', sorted(NODE_PARAMS))
def test_every_default_of_every_node_has_a_ros_type(node):
    for p in NODE_PARAMS[node]:
        if p.default is None:
            continue
        typed = typed_parameter(p, p.check(p.default))
        if p.kind == TEXTS:
            assert typed is None, p.name
        else:
            assert typed is not None and typed.name == p.name, p.name


def test_whole_numbers_become_doubles_where_the_parameter_is_a_float():
    rate = Param('rate_hz', 20.0, 'Hz', kind=FLOAT)
    assert typed_parameter(rate, rate.check(10)).type_ == Parameter.Type.DOUBLE
    rect = Param('mat_rect', (45.0, 45.0, 455.0, 455.0), 'units', kind=FLOATS)
    typed = typed_parameter(rect, rect.check([45, 45, 455, 455]))
    assert typed.type_ == Parameter.Type.DOUBLE_ARRAY and typed.value == [45.0, 45.0, 455.0, 455.0]
