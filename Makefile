# The two README commands, `make demo` and `make test`, each do all set-up on a fresh Debian/Ubuntu machine:
# a venv with the pinned ROS 2 Jazzy wheels, the messages built by CMake into that venv, and an editable install
# of this package. Every step leaves a stamp inside the venv and reruns only when its inputs change, so a second
# run starts real work within seconds. `make clean-venv` resets everything (nothing is written outside the
# venv and its build dir). Run make from a shell with no ROS setup sourced.
SHELL   := /bin/bash
PYTHON  ?= $(shell command -v /usr/bin/python3 || command -v python3)
VENV    ?= .venv
V       := $(abspath $(VENV))
ST      := $(V)/.stamps
BUILD   := $(V)/.build/toio_navigator
REQ     := tools/ros/requirements-ros-jazzy.txt
CON     := tools/ros/constraints-ros-jazzy.txt
FIXUPS  := $(CURDIR)/tools/ros/pip_ros_fixups.cmake
MSG_INPUTS := CMakeLists.txt package.xml $(wildcard msg/*.msg) $(wildcard action/*.action) $(wildcard srv/*.srv) \
              $(FIXUPS) toio_navigator/__init__.py $(wildcard scripts/*) $(wildcard launch/*) $(wildcard config/*)

export VIRTUAL_ENV := $(V)
export PATH := $(V)/bin:$(PATH)
export AMENT_PREFIX_PATH := $(V)
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
ifndef ROS_DOMAIN_ID
ROS_DOMAIN_ID := $(shell echo $$(( $$$$ % 90 + 10 )))
endif
export ROS_DOMAIN_ID
export PIP_DISABLE_PIP_VERSION_CHECK := 1
unexport _ROS_WHEELS_BOOTSTRAP_COMPLETE PYTHONPATH

.PHONY: install demo test bench planner-table clean-venv
install: $(ST)/msgs $(ST)/pip

$(V)/bin/python:
	$(PYTHON) -m venv $(V)

$(ST)/wheels: $(REQ) $(CON) | $(V)/bin/python
	pip install -q -r $(REQ) -c $(CON)
	@mkdir -p $(ST) && touch $@

$(ST)/msgs: $(ST)/wheels $(MSG_INPUTS)
	@mkdir -p $(BUILD)
	@echo "building messages (log: $(BUILD).log)"
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(V) -DBUILD_TESTING=OFF -DTOIO_PYTHON_FROM_PIP=ON \
	      -DCMAKE_PROJECT_INCLUDE=$(FIXUPS) > $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@cmake --build $(BUILD) -j$$(nproc) >> $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@cmake --install $(BUILD) >> $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@touch $@

$(ST)/pip: $(ST)/wheels setup.py
	pip install -q -e . -c $(CON)
	@touch $@

# The README's test command.
test: install
	python -m pytest -q test

# The README's demo command (simulated cubes).
demo: install
	toio-nav demo

# Benchmarks (not part of the test command): ratios against a baseline measured in the same run.
BENCHES := navigator_swarm sim_realtime arena_speed pose_to_motor_latency bluez_latency
bench: install
	@for b in $(BENCHES); do echo "== tools/bench/$$b.py"; python tools/bench/$$b.py || exit 1; done

# Regenerates docs/planners.md and docs/planner_cost.png (several minutes).
planner-table: install
	python tools/bench/planner_table.py --full-best

clean-venv:
	rm -rf $(V)
