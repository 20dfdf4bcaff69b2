"""pip installs of the pure-Python core and the ``toio-nav`` command.

colcon never runs this file: package.xml says ament_cmake, and CMakeLists.txt builds the messages. On pip-only
machines the Makefile builds the messages with CMake into the venv and installs this distribution editable.
The distribution is named ``toio-nav``, not ``toio_navigator``: rosidl registers an egg-info under that name, and
pip would delete the generated messages while "upgrading" it. Dependencies are not declared here on purpose: the
ROS wheels must be resolved together with tools/ros/constraints-ros-jazzy.txt (see the Makefile).
"""
from setuptools import find_packages, setup

setup(
    name='toio-nav',
    version='0.1.0',
    description='Swarm navigation, arena exploration and a byte-level simulator for toio Core Cubes (ROS 2)',
    license='Apache-2.0',
    packages=find_packages(include=['toio_navigator', 'toio_navigator.*']),
    package_data={'toio_navigator': ['data/*', 'data/**/*']},
    python_requires='>=3.10',
    entry_points={'console_scripts': [
        'toio-nav = toio_navigator.cli:main',
    ]},
)
