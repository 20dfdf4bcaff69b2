# The two README commands, `make demo` and `make test`, each do all set-up on a fresh Debian/Ubuntu machine:
# a venv with the pinned ROS 2 Jazzy wheels, the messages built by CMake into that venv, and an editable install
# of this package. Every step leaves a stamp inside the venv and reruns only when its inputs change, so a second
# run starts real work within seconds. `make clean-venv` resets everything (nothing is written outside the
# venv and its build dir). Run make from a shell with no ROS setup sourced.
SHELL   := /bin/bash
# the two message packages build side by side (GNU make 4.3 and later take -j from here)
MAKEFLAGS += -j2
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
# tf2_msgs (for /tf) has no wheel: where no tf2_msgs is installed, the public definition is built into the venv
TF2_DIR := tools/ros/tf2_msgs
TF2_BUILD := $(V)/.build/tf2_msgs
TF2_INPUTS := $(TF2_DIR)/CMakeLists.txt $(TF2_DIR)/package.xml $(wildcard $(TF2_DIR)/msg/*.msg) $(FIXUPS)

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

# The real ROS 2 command-line tools and launch, for the tests that run `ros2 launch`, `ros2 node`, ... and
# launch_testing (the product needs none of them): wheels built from the ROS 2 Jazzy sources in ROS_TOOLS/wheels,
# installed into the venv with their pinned PyPI dependencies, plus composition_interfaces (launch_ros imports it at
# start-up; no wheel carries it) built like tf2_msgs. ROS_TOOLS=DIR names the folder; left unset, it is a folder
# ros2/ with such wheels in a folder beside the repository. Without one (and without a ROS install) those tests
# skip, naming what is missing.
ROS_TOOLS ?= $(patsubst %/wheels/,%,$(firstword $(dir $(wildcard $(abspath $(CURDIR)/..)/*/ros2/wheels/*.whl))))
ROS_TOOLS_REQ := tools/ros/requirements-ros-tools.txt
COMP_DIR := tools/ros/composition_interfaces
COMP_BUILD := $(V)/.build/composition_interfaces
COMP_INPUTS := $(COMP_DIR)/CMakeLists.txt $(COMP_DIR)/package.xml $(wildcard $(COMP_DIR)/srv/*.srv) $(FIXUPS)
ROS_WHEELS := $(wildcard $(ROS_TOOLS)/wheels/*.whl)
ifneq ($(ROS_WHEELS),)
ROS_TOOLS_STEP := $(ST)/ros-tools
# the tests that need the tools fail instead of skipping where make installed them
export TOIO_NAV_ROS_TOOLS := required
else
ROS_TOOLS_STEP := ros-tools-absent
endif

.PHONY: install demo test bench planner-table clean-venv ros-tools-absent
install: $(ST)/msgs $(ST)/tf2_msgs $(ST)/pip

$(V)/bin/python:
	$(PYTHON) -m venv $(V)

# The ~210 pinned wheels go in with uv (itself pinned, from PyPI into the venv): pip unpacks them one by one, 29 s
# on two cores; uv fetches and links them in parallel, 4 s with an empty cache (kept in the venv, like everything
# else). Nothing is byte-compiled here: the pip step below compiles everything in parallel, once it is installed.
UV_PIN := uv==0.13.9
export UV_CACHE_DIR := $(V)/.cache/uv
$(ST)/wheels: $(REQ) $(CON) | $(V)/bin/python
	pip install -q $(UV_PIN)
	uv pip install -q --python $(V)/bin/python -r $(REQ) -c $(CON)
	@mkdir -p $(ST) && touch $@

$(ST)/msgs: $(ST)/wheels $(MSG_INPUTS)
	@mkdir -p $(BUILD)
	@echo "building messages (log: $(BUILD).log)"
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(V) -DBUILD_TESTING=OFF -DTOIO_PYTHON_FROM_PIP=ON \
	      -DCMAKE_PROJECT_INCLUDE=$(FIXUPS) > $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@cmake --build $(BUILD) -j$$(nproc) >> $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@cmake --install $(BUILD) >> $(BUILD).log 2>&1 || { tail -40 $(BUILD).log; exit 1; }
	@touch $@

# a tf2_msgs importable from outside the venv (a ROS install) is used as it is; otherwise ours is built into it
$(ST)/tf2_msgs: $(ST)/wheels $(TF2_INPUTS)
	@where=$$(python -c 'import tf2_msgs.msg, os; print(os.path.dirname(tf2_msgs.__file__))' 2>/dev/null); \
	if [ -n "$$where" ] && [ "$${where#$(V)/}" = "$$where" ]; then \
	  echo "using the installed tf2_msgs ($$where)"; \
	else \
	  mkdir -p $(TF2_BUILD) && echo "building tf2_msgs (log: $(TF2_BUILD).log)" && \
	  { cmake -S $(TF2_DIR) -B $(TF2_BUILD) -DCMAKE_INSTALL_PREFIX=$(V) -DBUILD_TESTING=OFF \
	          -DCMAKE_PROJECT_INCLUDE=$(FIXUPS) > $(TF2_BUILD).log 2>&1 && \
	    cmake --build $(TF2_BUILD) -j$$(nproc) >> $(TF2_BUILD).log 2>&1 && \
	    cmake --install $(TF2_BUILD) >> $(TF2_BUILD).log 2>&1; } || { tail -40 $(TF2_BUILD).log; exit 1; }; \
	fi
	@mkdir -p $(ST) && touch $@

# after the message builds: cmake and pip do not write into the venv at the same time
# Then everything is byte-compiled (3 s on two cores): where PYTHONDONTWRITEBYTECODE is set, as in many containers
# and CI images, no Python process may cache what it compiles, so each of the suite's hundreds of node processes
# compiled rclpy, launch, numpy and this package from source again (32 s of a 300 s suite on two cores).
$(ST)/pip: $(ST)/wheels setup.py | $(ST)/msgs $(ST)/tf2_msgs
	pip install -q -e . -c $(CON)
	python -m compileall -q -j 0 $(V)/lib toio_navigator
	@touch $@

# lark 1.3.1 (launch's substitution grammar) and rosidl's lark-parser 0.12 share the module `lark`: lark's files
# are written again after every wheel install, and rosidl generates with them as well (composition_interfaces here).
$(ST)/ros-tools: $(ST)/wheels $(ROS_WHEELS) $(ROS_TOOLS_REQ) $(COMP_INPUTS) | $(ST)/pip
	@echo "installing the ROS 2 command-line tools and launch from $(ROS_TOOLS)/wheels"
	@uv pip install -q --python $(V)/bin/python --no-deps $(ROS_WHEELS)
	@uv pip install -q --python $(V)/bin/python --reinstall-package lark -r $(ROS_TOOLS_REQ) -c $(CON)
	@where=$$(python -c 'import composition_interfaces.srv, os; print(os.path.dirname(composition_interfaces.__file__))' \
	         2>/dev/null); \
	if [ -n "$$where" ] && [ "$${where#$(V)/}" = "$$where" ]; then \
	  echo "using the installed composition_interfaces ($$where)"; \
	else \
	  mkdir -p $(COMP_BUILD) && echo "building composition_interfaces (log: $(COMP_BUILD).log)" && \
	  { cmake -S $(COMP_DIR) -B $(COMP_BUILD) -DCMAKE_INSTALL_PREFIX=$(V) -DBUILD_TESTING=OFF \
	          -DCMAKE_PROJECT_INCLUDE=$(FIXUPS) > $(COMP_BUILD).log 2>&1 && \
	    cmake --build $(COMP_BUILD) -j$$(nproc) >> $(COMP_BUILD).log 2>&1 && \
	    cmake --install $(COMP_BUILD) >> $(COMP_BUILD).log 2>&1; } || { tail -40 $(COMP_BUILD).log; exit 1; }; \
	fi
	@python -m compileall -q -j 0 $(V)/lib
	@touch $@

ros-tools-absent:
	@echo "no ROS 2 tool wheels in $(ROS_TOOLS): the tests of ros2 launch, ros2 node, ... and launch_testing skip"

# The README's test command: the lint rules of ruff.toml, then the suite, one worker per core, each taking whole
# files (a file's module-scoped fixtures, e.g. the lab network, stay in one worker). Most tests wait on real
# processes and real time, so two workers halve the wall time even on two cores. The 20 slowest tests are listed
# at the end, to keep the suite's time in view.
test: install $(ROS_TOOLS_STEP)
	ruff check .
	@command -v chromium >/dev/null || echo "make test: no chromium: the browser tests are skipped (as root: apt-get install chromium)"
	python -m pytest -q -n auto --dist loadfile --durations=20 test

# The README's demo command (simulated cubes).
demo: install
	toio-nav demo

# Benchmarks (not part of the test command): ratios against a baseline measured in the same run.
BENCHES := navigator_swarm sim_realtime arena_speed pose_to_motor_latency bluez_latency ble_air coordinated_swarm
bench: install
	@for b in $(BENCHES); do echo "== tools/bench/$$b.py"; python tools/bench/$$b.py || exit 1; done

# Regenerates docs/planners.md and docs/planner_cost.png (about 35 minutes on two cores).
planner-table: install
	python tools/bench/planner_table.py --full-best -j $$(nproc)

clean-venv:
	rm -rf $(V)
