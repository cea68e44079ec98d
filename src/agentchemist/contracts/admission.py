"""What a message must be to be taken in at all, free of ROS: the boundary rules every node applies to what
it receives, before any judge sees it (ros2_ws common/admission.py runs them on each subscription).

A message that breaks one is refused whole, with a named anomaly kind, and never ends a run by itself:
- a stamp further ahead of the receiver's clock than ``max_stamp_lead_s`` (``future_stamp``): taken in, it
  would be the newest reading, and every genuine reading after it would look late and be refused;
- a reading from a sensor the graph does not have (``unknown_sensor``);
- a message bigger than the graph ever sends (``oversized_message``: an audio chunk longer than
  ``max_audio_chunk_s``, a JSON text longer than ``max_json_chars``);
- a JSON payload that is not its symbol's note (``malformed_message``);
- a halt from a source that is not one of the graph's own agents, or of a kind no agent reports
  (``halt_refused``): anyone on the network can name itself ``dispenser_controller``, so this keeps out
  strays and typos; only DDS-Security permissions (SROS2) keep out a forger.
Names are matched with shell patterns (``*_piper_driver``): the launch files give the two arms' drivers
their side as a prefix.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase

from agentchemist.contracts.anomalies import AnomalyKind
from agentchemist.params import param

__all__ = ["BoundaryConfig", "REFUSAL_KINDS", "audio_problem", "halt_problem", "json_size_problem",
           "sensor_problem", "stamp_lead_problem"]

#: the graph's own agents (node names) and the operator (a person's stop, kind operator_stop); a halt from
#: any other source is refused
GRAPH_AGENTS = ("vision_supervisor", "dispenser_controller", "audio_supervisor", "action_policy", "recorder",
                "summarizer", "planner", "lab_sim", "ph_meter", "balance", "piper_driver", "*_piper_driver",
                "audio_capture", "wav_source", "status_overlay", "operator")

#: what the boundary reports; none of them is about the dispensed volume or the run's outcome
REFUSAL_KINDS = frozenset({AnomalyKind.FUTURE_STAMP, AnomalyKind.UNKNOWN_SENSOR, AnomalyKind.OVERSIZED_MESSAGE,
                           AnomalyKind.MALFORMED_MESSAGE, AnomalyKind.HALT_REFUSED, AnomalyKind.PLAN_REFUSED})


@dataclass(frozen=True)
class BoundaryConfig:
    max_stamp_lead_s: float = param(
        5.0, unit="s", low=0.0, high=3600.0,
        description="A message stamped further ahead of the receiving node's clock than this is refused "
                    "(future_stamp). Above the twin's clock lead (max_lead_s, 2 s) and a robot's clock skew")
    sensors: tuple = param(("ph_meter", "balance"),
                           description="Sensor names (ChemicalReading.sensor, shell patterns) whose readings "
                                       "are taken; any other is refused (unknown_sensor)")
    halt_sources: tuple = param(GRAPH_AGENTS,
                                description="Sources (node names, shell patterns) whose halt anomalies are "
                                            "taken; a halt from any other is refused (halt_refused)")
    max_audio_chunk_s: float = param(
        1.0, unit="s", low=0.01, high=60.0,
        description="An AudioChunk longer than this at its own sample rate is refused (oversized_message); "
                    "the microphone sends 10 ms, the twin 100 ms")
    max_audio_rate_hz: int = param(192000, unit="Hz", low=8000, high=768000,
                                   description="An AudioChunk at a higher sample rate is refused")
    max_json_chars: int = param(
        1_000_000, low=1000, high=100_000_000,
        description="A JSON text field (a payload, a plan) longer than this is refused (oversized_message)")


def _named(name: str, patterns) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def stamp_lead_problem(stamp: float, now: float, max_lead_s: float) -> str | None:
    """Why a message stamped `stamp` is too far in the receiver's future at `now`, or None. A clock that has
    not started (0 on sim time) cannot judge, and an unstamped message is for the judges to refuse."""
    if now <= 0.0 or not math.isfinite(stamp) or stamp <= 0.0:
        return None
    lead = stamp - now
    if lead > max_lead_s:
        return f"stamped {lead:.3f} s ahead of this node's clock (more than {max_lead_s:g} s)"
    return None


def sensor_problem(sensor: str, sensors) -> str | None:
    if _named(sensor, sensors):
        return None
    return f"sensor {sensor[:80]!r} is not one of the graph's ({', '.join(sensors)})"


def halt_problem(source: str, kind: str, sources) -> str | None:
    """Why a halt from `source` of `kind` is not taken, or None."""
    if not _named(source, sources):
        return f"a halt from {source[:80]!r}, which is not one of the graph's agents"
    if kind not in AnomalyKind._value2member_map_ and not kind.startswith("piper_"):
        return f"a halt of kind {kind[:80]!r}, which no agent reports"
    return None


def audio_problem(samples: int, sample_rate: int, channels: int, config: BoundaryConfig) -> str | None:
    if sample_rate <= 0 or channels <= 0:
        return None  # the audio supervisor refuses it as bad_audio, with the recording's context
    if sample_rate > config.max_audio_rate_hz:
        return f"an audio chunk at {sample_rate} Hz (more than {config.max_audio_rate_hz} Hz)"
    seconds = samples / channels / sample_rate
    if seconds > config.max_audio_chunk_s:
        return f"an audio chunk of {seconds:.2f} s ({samples} samples; more than {config.max_audio_chunk_s:g} s)"
    return None


def json_size_problem(field: str, text: str, max_chars: int) -> str | None:
    if len(text) > max_chars:
        return f"{field} of {len(text)} characters (more than {max_chars})"
    return None
