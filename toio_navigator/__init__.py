"""toio_navigator: swarm navigation, arena exploration and a byte-level simulator for toio Core Cubes.

The generated ROS messages live in ``toio_navigator.msg``; they are installed by the CMake build into a
different directory than this file, so the package path is extended to find both halves.
This module must stay import-light: no rclpy, no ``.msg``.
"""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
__version__ = '0.1.0'
