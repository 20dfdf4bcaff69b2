"""The reference Navigator (HLAvoid, Boids, modes, CubeHandle) and the swarm step. No ROS imports.

Public API (import from the submodules; this package imports nothing so that it stays light):

* ``navigator.Navigator(entity, mode, params)`` with ``add_other`` / ``add_wall`` / ``add_border`` and
  ``get_waypoint_to(target)`` / ``get_waypoint_away(target)`` → ``NaviResult`` (one robot, reference semantics);
  ``navigator.navigate(EgoBatch, PairBatch, walls, params, mode, direction)`` → ``NaviBatch`` (B queries).
* ``swarm.swarm_step(pos, rad, spd, vel, w, goals, params, walls, mode, direction, ...)`` → ``NaviBatch`` for all
  N cubes at once, with neighbour culling.
* ``cube_handle.CubeHandle`` (``update``, ``move_to_target``, ``move`` → ``Movement`` with a ``MotorCommand``),
  ``cube_navigator.CubeNavigator`` (``update``, ``navi_to_target``, ``navi_away_target``).
* ``hlavoid_planner.HLAvoidPlanner`` — the LocalPlanner of planner.py running the Navigator.
* ``params`` — every reference constant with its default, and ``Fixes`` (named defect fixes, all off).
* ``query_cli`` — ``toio-nav query SCENARIO.json RESULT.json`` (test/data/conformance/FORMAT.md).
"""
