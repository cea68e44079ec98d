"""recorder: the high-confidence chemical quantity recorder.

Keeps every raw observation, fuses the dispensed volume per drop, filters single-source readings, and
publishes each FusedRecord only after it is durable in the store (SQLite in runs/<experiment_id>/records.db
by default, or PostgreSQL): the publication is the acknowledgement. Writes the stop record when the FSM
reaches a terminal state, even on abort, and says how the run ended in its record_closed note (the one
judgement of the outcome, agentchemist.record.outcome; again if an anomaly heard later changes it).

What is recorded of each message is agentchemist.record.recording.Recording's to decide (one per
experiment); this node turns messages into its typed inputs, publishes the records it returns, answers
QueryRecords and reports store failures as anomalies.
"""
import dataclasses
import math
import threading
import time

from rclpy.clock import Clock, ClockType

from agentchemist_ros.common.guarded import GuardedNode

from agentchemist.contracts import AnomalyKind, Severity, Symbol
from agentchemist.contracts.notes import RecordClosed
from agentchemist.record.errors import RecordInputError, StoreDamagedError, StoreError
from agentchemist.record.recording import (AgentNote, AnomalyNote, AudioEventNote, DispenserNote, Estimate,
                                           FsmUpdate, Reading, RecorderConfig, Recording)
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioEvent, ChemicalReading, DispenserState,
                                         ExperimentPlan, FsmState, FusedRecord, QuantityEstimate, RecorderStatus)
from agentchemist_interfaces.srv import QueryRecords
from agentchemist_ros.common.clock_acks import acknowledge_clock
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import decode_payload, encode_note
from agentchemist_ros.common.params import declare_config
from agentchemist_ros.common.qos import ANOMALY_LOG, FSM, LATCHED, READINGS, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import calendar_now, node_now, to_msg, to_sec


#: the longest the status timer waits for the store's flush (wall s); longer is a store that takes no rows
FLUSH_LIMIT_S = 5.0


def typed(cls, msg, **given):
    """`cls` (a Recording input) from the message fields of the same names; `given` supplies the rest."""
    return cls(**given, **{f.name: getattr(msg, f.name) for f in dataclasses.fields(cls) if f.name not in given})


class RecorderNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("recorder", **kwargs)
        self.clock_ack = acknowledge_clock(self)  # in its own process: the twin keeps within reach
        self.config = declare_config(self, RecorderConfig)
        # Callbacks come from several executor threads: one lock keeps a record's store write and its
        # publication in the same order for every input.
        self.lock = threading.RLock()
        self.recording: Recording | None = None
        self.close_with_node(self.release_store)
        self.experiment_id = ""  # set before its store opens: a store failure while opening names it
        self.fsm_experiment, self.pending = "", None  # the supervisor's experiment; a plan waiting for it
        self.lost = ""  # the experiment whose store took no more rows (storage_lost)
        self.record_pub = self.create_publisher(FusedRecord, topics.RECORDS, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(ExperimentPlan, topics.PLAN, self.on_plan, LATCHED)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM)
        self.create_subscription(QuantityEstimate, topics.QUANTITY, self.on_quantity, RELIABLE)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.on_reading, READINGS)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, ANOMALY_LOG)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self.on_audio_event, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.create_subscription(DispenserState, topics.DISPENSER_STATE, self.on_dispenser, FSM)
        self.create_service(QueryRecords, topics.QUERY_RECORDS, self.query)
        # The run depends on its record (agentchemist.fsm.record_watch): the status acknowledges a plan and
        # then says, every status_period_s, that what arrived is durable.
        self.records = 0  # published (acknowledged) in this experiment
        self.unacked = []  # records stored but not yet flushed and published
        self.status_pub = self.create_publisher(RecorderStatus, topics.RECORDER_STATUS, LATCHED)
        self.create_timer(self.config.status_period_s, self.publish_status)
        # ... and on the wall clock when the node's clock stands still: the twin holds its clock while the
        # supervisor waits for the recorder's return (peer_waits), so a status on that clock alone never came
        # (a recorder stopped 20 s was seen back 50-60 s after SIGCONT, at the twin's wait limit).
        self.last_status = time.monotonic()
        self.create_timer(self.config.status_period_s / 2, self.status_if_quiet, clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ------------------------------------------------------------------ lifecycle
    def on_plan(self, msg):
        with self.lock:
            if msg.experiment_id == self.experiment_id:
                return
            if self.recording is not None and not self.recording.closed and msg.experiment_id != self.fsm_experiment:
                # One experiment at a time: a plan for another while this record is open is the supervisor's to
                # accept or refuse; it is recorded from the supervisor's first state for it, never before.
                self.pending = msg
                return
            self.pending = None
        self.open_plan(msg)

    def open_plan(self, msg):
        with self.lock:
            previous = self.close_store(superseded_by=msg.experiment_id)
            self.experiment_id = msg.experiment_id
            try:
                self.config.store_url_for(msg.experiment_id)  # the id names the run folder: refused if unsafe
            except RecordInputError as exc:
                self.recording = None
                self.anomaly_pub.publish(make_anomaly(
                    now=node_now(self), experiment_id="", source=self.get_name(), kind=AnomalyKind.INVALID_PLAN,
                    severity=Severity.WARN, description=f"not recorded: {exc}"))
                return
            try:
                self.recording = Recording.open(
                    self.config, msg.experiment_id, now=to_sec(msg.stamp) or node_now(self), instruction=msg.instruction,
                    plan_json=msg.plan_json, previous=previous, on_failure=self.store_failure, calendar=calendar_now())
            except (StoreError, OSError) as exc:  # a damaged database, a read-only or full runs folder
                self.recording = None
                text = " ".join(f"cannot record {msg.experiment_id}: {exc}".split())[:400]
                kind = (AnomalyKind.STORE_DAMAGED if isinstance(exc, StoreDamagedError) else AnomalyKind.DISK_FULL
                        if "full" in text.lower() or "no space" in text.lower() else AnomalyKind.IO_ERROR)
                self.get_logger().error(text)  # one line: a run that cannot be recorded does not start
                self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=msg.experiment_id,
                                                      source=self.get_name(), kind=kind, severity=Severity.HALT,
                                                      description=text, response="abort"))
                return
            url, self.records = self.recording.url, 0
        self.get_logger().info(f"recording {msg.experiment_id} into {url}")
        self.publish_status()

    def on_fsm(self, msg):
        with self.lock:
            self.fsm_experiment = msg.experiment_id
            pending = self.pending if self.pending and self.pending.experiment_id == msg.experiment_id else None
        if pending is not None:  # the supervisor runs (or refused) the plan that waited: record it
            self.pending = None
            self.open_plan(pending)
        with self.lock:
            if self.recording is None or self.lost == self.experiment_id:
                return
            try:
                closed = self.recording.on_fsm(typed(FsmUpdate, msg, stamp=to_sec(msg.stamp)), calendar=calendar_now())
            except StoreError as exc:
                return self.storage_lost(exc)
            if closed is not None:  # the stop record is flushed, and with it every record before it
                self.acknowledge()
        if closed is not None:
            self.publish_closed(closed)

    def publish_closed(self, closed):
        """The record_closed note: to the summarizer (it reports the run; a repeat it ignores), read by the
        planner too (the outcome it returns)."""
        note = RecordClosed(closed.store, closed.status, closed.outcome.kind.value, closed.outcome.message)
        self.msg_pub.publish(AgentMessage(stamp=to_msg(closed.stamp), experiment_id=closed.experiment_id,
                                          sender=self.get_name(), receiver="summarizer",
                                          symbol=Symbol.RECORD_CLOSED, payload_json=encode_note(note)))

    # ------------------------------------------------------------------ observations
    def on_quantity(self, msg):
        self.record(lambda r: r.on_estimate(typed(Estimate, msg, stamp=to_sec(msg.stamp))))

    def on_reading(self, msg):
        self.record(lambda r: r.on_reading(typed(Reading, msg, stamp=to_sec(msg.header.stamp))))

    def on_message(self, msg):
        if msg.receiver == self.get_name():
            self.record(lambda r: r.on_note(typed(AgentNote, msg, stamp=to_sec(msg.stamp),
                                                  payload=decode_payload(msg))))

    def on_anomaly(self, msg):
        self.record(lambda r: r.on_anomaly(typed(AnomalyNote, msg, stamp=to_sec(msg.stamp))))

    def on_dispenser(self, msg):
        self.record(lambda r: r.on_dispenser(typed(DispenserNote, msg, stamp=to_sec(msg.stamp))))

    def on_audio_event(self, msg):
        self.record(lambda r: r.on_audio_event(typed(AudioEventNote, msg, stamp=to_sec(msg.stamp),
                                                     start=to_sec(msg.start), end=to_sec(msg.end))))

    def record(self, apply):
        """Apply an input to the experiment being recorded (none: dropped); the records it made wait for
        the next status, which makes them durable with one flush and publishes them in the order stored."""
        with self.lock:
            if self.recording is None or self.lost == self.experiment_id:
                return
            try:
                self.unacked.extend(apply(self.recording) or ())
            except StoreError as exc:
                return self.storage_lost(exc)
            for n in self.recording.take_notices():  # what it found wrong with the data itself
                self.anomaly_pub.publish(make_anomaly(
                    now=n.stamp, experiment_id=self.experiment_id, source=self.get_name(), kind=n.kind,
                    severity=n.severity, description=n.description, resolved=n.resolved))
            revised = self.recording.take_revision()  # a halt heard after the terminal state said why
        if revised is not None:
            self.publish_closed(revised)

    def acknowledge(self):
        """Publish the records made durable since the last call (the caller flushed or closed the store)."""
        for record in self.unacked:
            self.records += 1
            self.record_pub.publish(FusedRecord(
                stamp=to_msg(record.stamp), experiment_id=record.experiment_id, seq=record.seq,
                quantity=record.quantity, unit=record.unit,
                value=float(record.value) if math.isfinite(record.value) else float("nan"),
                confidence=float(record.confidence), channels=list(record.channels),
                channel_values=[float(v) for v in record.channel_values],
                channel_confidences=[float(c) for c in record.channel_confidences],
                fsm_state=record.fsm_state, subtask_id=record.subtask_id,
                quality_flags=list(record.quality_flags)))
        self.unacked.clear()

    # ------------------------------------------------------------------ outputs
    def status_if_quiet(self):
        if time.monotonic() - self.last_status >= self.config.status_period_s:
            self.publish_status()

    def publish_status(self):
        """Everything received before now is durable (flushed) - say so, and for which experiment."""
        with self.lock:
            self.last_status = time.monotonic()
            now, recording = node_now(self), self.recording
            if recording is not None and self.lost == self.experiment_id:
                return  # nothing more is durable: no acknowledgement (the run is ending on the halt)
            if recording is not None and not recording.store.closed:
                try:  # bounded: a stuck disk must not hold the executor every node shares
                    recording.store.flush(timeout=FLUSH_LIMIT_S)
                except StoreError as exc:
                    return self.storage_lost(exc)
            self.acknowledge()
            degraded = recording is not None and recording.store.degraded
            self.status_pub.publish(RecorderStatus(
                stamp=to_msg(node_now(self)), experiment_id=self.experiment_id, recording=recording is not None,
                stored_through=to_msg(now), records=self.records, degraded=degraded,
                message="spilling: the database cannot take rows" if degraded else ""))

    def storage_lost(self, exc):
        """The store takes no more rows (a full or read-only disk under both the database and its spill, a
        stuck database): the run cannot be recorded, so it ends, once, on a named halt with one line, and
        nothing more is acknowledged as durable."""
        self.lost = self.experiment_id
        text = " ".join(f"cannot record {self.experiment_id} any more: {exc}".split())[:400]
        full = any(w in text.lower() for w in ("full", "no space"))
        self.get_logger().error(text)
        self.anomaly_pub.publish(make_anomaly(
            now=node_now(self), experiment_id=self.experiment_id, source=self.get_name(),
            kind=AnomalyKind.DISK_FULL if full else AnomalyKind.WRITE_FAILED, severity=Severity.HALT,
            description=text, response="abort"))

    def store_failure(self, kind, description):
        self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=self.experiment_id,
                                              source=self.get_name(), kind=kind, severity=Severity.WARN,
                                              description=description, response="adjustment"))

    def query(self, request, response):
        with self.lock:
            store = self.recording.store if self.recording is not None else None
        if store is None:
            response.success, response.message = False, "no experiment is being recorded"
            return response
        rows = store.query_fused(request.experiment_id or self.experiment_id, quantity=request.quantity or None,
                                 since=to_sec(request.since) or None, until=to_sec(request.until) or None,
                                 limit=int(request.limit))
        response.records = [FusedRecord(stamp=to_msg(r["stamp"]), experiment_id=request.experiment_id or self.experiment_id,
                                        seq=int(r["seq"]), quantity=r["quantity"], unit=r["unit"], value=float(r["value"]),
                                        confidence=float(r["confidence"]), channels=list(r["channels"]),
                                        channel_values=[float(v) for v in r["channel_values"]],
                                        channel_confidences=[float(v) for v in r["channel_confidences"]],
                                        fsm_state=r["fsm_state"], subtask_id=r["subtask_id"],
                                        quality_flags=list(r["quality_flags"])) for r in rows]
        response.success, response.message = True, f"{len(rows)} records"
        return response

    def close_store(self, superseded_by: str = "") -> Recording | None:
        """Close the store of the experiment being recorded; return its recording (None if there was none).
        A record another experiment supersedes before its end gets its stop record (aborted) first."""
        recording, self.recording = self.recording, None
        if recording is not None and superseded_by:
            recording.stop_unfinished(node_now(self), f"the record was closed unfinished: experiment "
                                                      f"{superseded_by} started")
        if recording is not None:
            left = recording.close()  # writes out what is queued: the records made so far are durable
            if left:  # the database stayed down: the run's rows are only in its spill file
                self.get_logger().warn(left)
                self.store_failure("spill_unreplayed", left)
            self.acknowledge()
        return recording

    def release_store(self) -> None:
        """When the node is destroyed: the experiment being recorded is closed like at its end."""
        with self.lock:
            self.close_store()


def main(args=None):
    spin_node(RecorderNode, args)


if __name__ == "__main__":
    main()
