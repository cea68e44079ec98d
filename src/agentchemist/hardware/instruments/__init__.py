"""Laboratory instruments on a serial line (RS-232 / USB serial), without ROS.

- `framing`: bytes from the port -> text frames, surviving garbage bytes and partial lines.
- `ph_dialects`, `balance_dialects`: what the instruments send and answer, parsed into `Reading`s that
  carry their own quality (self_check_ok false with the reason), never raising on bad input.
- `electrode`: two- / three-point buffer calibration of a pH electrode and its per-probe store.
- `link`: the driver logic one node runs per instrument (polling, deadline, reconnect bookkeeping);
  time is always an argument.
"""
from agentchemist.hardware.instruments.readings import Reading

__all__ = ["Reading"]
