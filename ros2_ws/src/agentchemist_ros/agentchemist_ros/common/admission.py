"""The boundary of every node: each subscription's messages pass agentchemist.contracts.admission's rules
before the node's callback sees them (GuardedNode wraps every subscription with :meth:`Admission.admit`).

A refused message is dropped whole and reported as a warn anomaly of its kind (never a halt: one bad
message must not end a run), once per kind and then at most every ``REPORT_EVERY_S`` wall seconds with the
count refused meanwhile, so a flood of bad messages is counted, not echoed. Message types without a rule
(FsmState, heartbeats, ...) reach their callback unwrapped.

The parameters are ``boundary.*`` on every node (contracts.admission.BoundaryConfig).
"""
from __future__ import annotations

import functools
import inspect
import threading
import time

from agentchemist.contracts import AnomalyKind, Severity
from agentchemist.contracts.admission import (BoundaryConfig, audio_problem, halt_problem, json_size_problem,
                                              sensor_problem, stamp_lead_problem)
from agentchemist.contracts.notes import NOTES, note_from
from agentchemist.contracts.symbols import Symbol
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import decode_object
from agentchemist_ros.common.params import declare_config
from agentchemist_ros.common.timeconv import node_now, to_sec

REPORT_EVERY_S = 5.0


class Admission:
    """One node's boundary: the rules for each message type, and the reports of what was refused."""

    def __init__(self, node, publisher):
        self.node, self.publisher = node, publisher
        self.config = declare_config(node, BoundaryConfig, prefix="boundary.")
        self.lock = threading.Lock()
        self.reported: dict[str, tuple[float, int]] = {}  # kind -> (wall time of its last report, refused since)
        self.rules = {"ChemicalReading": self.reading, "AudioChunk": self.audio, "Image": self.headed,
                      "QuantityEstimate": self.stamped, "AudioEvent": self.stamped, "Anomaly": self.anomaly,
                      "AgentMessage": self.message, "ExperimentPlan": self.plan}

    def admit(self, msg_type, callback):
        """`callback` behind the rules of `msg_type` (unchanged for a type without rules)."""
        rule = self.rules.get(getattr(msg_type, "__name__", ""))
        if rule is None:
            return callback

        if inspect.iscoroutinefunction(callback):
            @functools.wraps(callback)
            async def admitted_async(msg, *args):
                problem = rule(msg)
                if problem is None:
                    return await callback(msg, *args)
                self.refused(*problem)
                return None
            return admitted_async

        @functools.wraps(callback)
        def admitted(msg, *args):
            problem = rule(msg)
            if problem is None:
                return callback(msg, *args)
            self.refused(*problem)
            return None
        return admitted

    # ------------------------------------------------------------------ the rules: (kind, why) or None
    def lead(self, stamp):
        why = stamp_lead_problem(to_sec(stamp), node_now(self.node), self.config.max_stamp_lead_s)
        return (AnomalyKind.FUTURE_STAMP, why) if why else None

    def headed(self, msg):
        return self.lead(msg.header.stamp)

    def stamped(self, msg):
        return self.lead(msg.stamp)

    def reading(self, msg):
        if why := sensor_problem(msg.sensor, self.config.sensors):
            return AnomalyKind.UNKNOWN_SENSOR, f"{msg.quantity[:40]} reading refused: {why}"
        return self.headed(msg)

    def audio(self, msg):
        if why := audio_problem(len(msg.data), int(msg.sample_rate), int(msg.channels), self.config):
            return AnomalyKind.OVERSIZED_MESSAGE, why
        return self.headed(msg)

    def anomaly(self, msg):
        if msg.severity == Severity.HALT and (why := halt_problem(msg.source, msg.kind, self.config.halt_sources)):
            return AnomalyKind.HALT_REFUSED, f"{why}: not acted on"
        return None

    def message(self, msg):
        """A message to this node: its payload is read here first; one that cannot be is refused whole."""
        if msg.receiver != self.node.get_name():
            return None  # not for this node: its callback passes it by
        if why := json_size_problem(f"{msg.symbol[:40]} payload_json", msg.payload_json, self.config.max_json_chars):
            return AnomalyKind.OVERSIZED_MESSAGE, why
        try:
            payload = decode_object(msg.payload_json, "payload_json")
            if msg.symbol in Symbol._value2member_map_ and Symbol(msg.symbol) in NOTES:
                note_from(msg.symbol, payload)
        except ValueError as exc:
            return AnomalyKind.MALFORMED_MESSAGE, f"{msg.symbol[:40]} from {msg.sender[:40]!r}: {exc}"[:300]
        return self.stamped(msg)

    def plan(self, msg):
        if why := json_size_problem("plan_json", msg.plan_json, self.config.max_json_chars):
            return AnomalyKind.OVERSIZED_MESSAGE, why
        return self.stamped(msg)

    # ------------------------------------------------------------------ reports
    def refused(self, kind, why) -> None:
        """Report a refusal: the first of its kind at once, later ones at most every REPORT_EVERY_S with
        how many were refused meanwhile (none goes uncounted)."""
        wall = time.monotonic()
        with self.lock:
            last, count = self.reported.get(kind, (-REPORT_EVERY_S, 0))
            count += 1
            if wall - last < REPORT_EVERY_S:
                self.reported[kind] = (last, count)
                return
            self.reported[kind] = (wall, 0)
        text = f"refused at entry: {why}" + (f" ({count} refused since the last report)" if count > 1 else "")
        self.node.get_logger().warn(text)
        self.publisher.publish(make_anomaly(
            now=node_now(self.node), experiment_id=getattr(self.node, "experiment_id", "") or "",
            source=self.node.get_name(), kind=kind, severity=Severity.WARN, description=text, response="none"))
