"""AgileX Piper arm over CAN: frame codec, driver logic and a simulated firmware (no ROS, no clock).

- :mod:`.codec`: the CAN frames the driver uses, as python-can ``can.Message`` objects;
- :mod:`.driver`: :class:`PiperDriver`, feedback -> joint state, commands -> frames, the safety rules of
  docs/robot.md (startup hold, clamping, non-finite commands, dead bus);
- :mod:`.firmware_sim`: :class:`PiperFirmwareSim`, a stand-in arm on any python-can bus for tests.
"""
from agentchemist.hardware.piper.driver import DriverConfig, DriverEvent, JointStateReading, PiperDriver
from agentchemist.hardware.piper.firmware_sim import PiperFirmwareSim

__all__ = ["DriverConfig", "DriverEvent", "JointStateReading", "PiperDriver", "PiperFirmwareSim"]
