"""Closed-loop trials: benchmark scenarios through the navigator's controller and the simulated cubes, with the
timing of a real radio link and host (``toio-nav trial``)."""
