"""recorder: the high-confidence chemical quantity recorder.

Keeps every raw observation, fuses the dispensed volume per drop (agentchemist.record.VolumeFuser),
filters single-source readings, and publishes each FusedRecord only after it is durable in the store
(SQLite in runs/<experiment_id>/records.db by default, or PostgreSQL): the publication is the
acknowledgement. Writes the stop record when the FSM reaches a terminal state, even on abort.

The audio supervisor's audio_noise anomaly (and its resolution) bound a window in which the audio
channel is gated to confidence 0 and the statistical channel carries the per-drop records (see
agentchemist.record.volume_fusion); other anomalies reduce every channel around their stamp.
"""
import json
import math
import threading
from pathlib import Path

from rclpy.node import Node

from agentchemist.record import PH_FILTER, TEMPERATURE_FILTER, SingleSourceFilter, open_store
from agentchemist.record.ordering import StampOrder
from agentchemist.record.volume_fusion import VolumeFuser
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioEvent, ChemicalReading, ExperimentPlan,
                                         FsmState, FusedRecord, QuantityEstimate)
from agentchemist_interfaces.srv import QueryRecords
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


KNOWN_CHANNELS = ("statistical", "audio", "sensor", "vision")


class RecorderNode(Node):
    def __init__(self, **kwargs):
        super().__init__("recorder", **kwargs)
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.store_url = declare(self, "store_url", "",
                                 "'' = SQLite at runs/<id>/records.db; or sqlite:///path.db or postgresql://...")
        self.ph_period = declare(self, "ph_record_period", 1.0, "Smoothed pH record period (s)", low=0.0, high=60.0)
        self.lock = threading.RLock()
        self.store = None
        self.experiment_id = ""
        self.fsm_state = ""
        self.subtask_id = ""
        self.closed = False
        self.fuser = VolumeFuser()
        self.order = StampOrder()
        self.filters = {"pH": SingleSourceFilter(PH_FILTER), "temperature": SingleSourceFilter(TEMPERATURE_FILTER)}
        self.last_fused_stamp = {}
        self.record_pub = self.create_publisher(FusedRecord, topics.RECORDS, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(ExperimentPlan, topics.PLAN, self.on_plan, LATCHED)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM)
        self.create_subscription(QuantityEstimate, topics.QUANTITY, self.on_quantity, RELIABLE)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.on_reading, READINGS)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, RELIABLE)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self.on_audio_event, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.create_service(QueryRecords, topics.QUERY_RECORDS, self.query)

    # ------------------------------------------------------------------ lifecycle
    def on_plan(self, msg):
        with self.lock:
            if msg.experiment_id == self.experiment_id:
                return
            self.close_store()
            self.experiment_id = msg.experiment_id
            self.closed = False
            self.fuser = VolumeFuser()
            self.order = StampOrder()
            url = self.store_url or str(self.runs_dir / msg.experiment_id / "records.db")
            if not self.store_url:
                Path(url).parent.mkdir(parents=True, exist_ok=True)
            self.db_path = url
            self.store = open_store(url, on_failure=self.store_failure)
            try:
                plan = json.loads(msg.plan_json)
            except json.JSONDecodeError:
                plan = {"unparsed": msg.plan_json}
            self.store.start_experiment(msg.experiment_id, now=to_sec(msg.stamp) or node_now(self),
                                        instruction=msg.instruction, metadata={"plan": plan})
            self.store.flush()
        self.get_logger().info(f"recording {msg.experiment_id} into {url}")

    def on_fsm(self, msg):
        with self.lock:
            if self.store is None or msg.experiment_id != self.experiment_id:
                return
            stamp = to_sec(msg.stamp)
            if msg.previous_state or msg.symbol:
                self.store.add_transition(self.experiment_id, stamp=stamp, from_state=msg.previous_state,
                                          to_state=msg.state, symbol=msg.symbol, subtask_id=msg.subtask_id,
                                          agent="vision_supervisor")
            self.fsm_state, self.subtask_id = msg.state, msg.subtask_id
            if msg.terminal and not self.closed:
                status = "completed" if msg.accepting else "aborted"
                self.store.finish_experiment(self.experiment_id, now=stamp, status=status,
                                             reason="" if msg.accepting else f"ended in {msg.state}")
                self.store.flush()
                self.closed = True
                exp, db = self.experiment_id, self.db_path
            else:
                return
        self.msg_pub.publish(AgentMessage(stamp=to_msg(stamp), experiment_id=exp, sender=self.get_name(),
                                          receiver="summarizer", symbol="record_closed",
                                          payload_json=json.dumps({"store": db, "status": status})))

    # ------------------------------------------------------------------ observations
    def on_quantity(self, msg):
        with self.lock:
            if self.store is None:
                return
            stamp = to_sec(msg.stamp)
            flags = [] if math.isfinite(msg.value) and 0.0 <= msg.confidence <= 1.0 else ["invalid_input"]
            if msg.channel not in KNOWN_CHANNELS:
                flags.append(f"unknown_channel:{msg.channel}")
            late = self.order.check(f"{msg.channel}/{msg.quantity}", stamp)
            if late:
                flags.append(late)  # stored as raw, excluded from fusion
            self.store.add_raw(self.experiment_id, stamp=stamp, channel=msg.channel, sensor=msg.channel,
                               quantity=msg.quantity, value=msg.value, unit=msg.unit, confidence=msg.confidence,
                               fsm_state=msg.fsm_state or self.fsm_state, subtask_id=msg.subtask_id,
                               flags=flags, payload={"delta": msg.delta, "event_id": msg.event_id})
            if flags or msg.quantity != "titrant_volume":
                return
            if msg.channel == "statistical":
                for at, result in self.fuser.add_statistical(msg.value, msg.confidence, stamp, msg.delta,
                                                             self.fsm_state):
                    self.write_carried(at, result, msg.subtask_id)
                return
            if msg.channel != "audio":
                return
            result = self.fuser.fuse_drop(msg.value, msg.confidence, stamp, msg.delta, self.fsm_state)
            self.write_fused(stamp, "titrant_volume", "mL", result.value, result.confidence,
                             list(result.channels), list(result.channel_values), list(result.channel_confidences),
                             list(result.quality_flags), msg.subtask_id)

    def on_reading(self, msg):
        with self.lock:
            if self.store is None:
                return
            stamp = to_sec(msg.header.stamp)
            late = self.order.check(f"{msg.sensor}/{msg.quantity}", stamp)
            if late:  # an old or unstamped reading: keep it raw, never feed it to the filter
                self.store.add_raw(self.experiment_id, stamp=stamp, channel="sensor", sensor=msg.sensor,
                                   quantity=msg.quantity, value=msg.value, unit=msg.unit, confidence=0.0,
                                   fsm_state=self.fsm_state, subtask_id=self.subtask_id, flags=[late])
                return
            filt = self.filters.get(msg.quantity)
            filtered = filt.update(msg.value, stamp, msg.self_check_ok, msg.noise) if filt else None
            flags = list(filtered.flags) if filtered else ([] if math.isfinite(msg.value) else ["invalid_input"])
            self.store.add_raw(self.experiment_id, stamp=stamp, channel="sensor", sensor=msg.sensor,
                               quantity=msg.quantity, value=msg.value, unit=msg.unit,
                               confidence=filtered.confidence if filtered else (1.0 if msg.self_check_ok else 0.3),
                               fsm_state=self.fsm_state, subtask_id=self.subtask_id, flags=flags)
            if msg.quantity == "mass" and not flags and msg.self_check_ok:
                # One balance is the only source of mass: its reading is the record (the supervisor's
                # settled values are recorded as mass_settled); the periodic trace is for the chart.
                if stamp - self.last_fused_stamp.get("mass", -1e9) >= self.ph_period:
                    self.last_fused_stamp["mass"] = stamp
                    self.write_fused(stamp, "mass", msg.unit, msg.value, 1.0, ["sensor"], [msg.value], [1.0],
                                     [], self.subtask_id)
                return
            if filtered is None or filtered.outlier or not math.isfinite(filtered.value):
                return
            name = {"pH": "ph", "temperature": "temperature"}[msg.quantity]
            if stamp - self.last_fused_stamp.get(name, -1e9) >= self.ph_period:
                self.last_fused_stamp[name] = stamp
                self.write_fused(stamp, name, msg.unit, filtered.value, filtered.confidence, ["sensor"],
                                 [msg.value], [filtered.confidence], flags, self.subtask_id)

    def on_message(self, msg):
        with self.lock:
            if self.store is None or msg.experiment_id != self.experiment_id or msg.receiver != self.get_name():
                return
            payload = json.loads(msg.payload_json or "{}")
            stamp = to_sec(msg.stamp)
            if msg.symbol == "ph_stable" and payload.get("ph") is not None:
                ph = float(payload["ph"])
                self.write_fused(stamp, "ph_settled", "pH", ph, 1.0, ["sensor"], [ph], [1.0], [], msg.subtask_id)
            elif msg.symbol == "mass_settled" and payload.get("mass_g") is not None:
                # The settled mass after each pour pulse, and the weighed mass at the end of the pour (the
                # supervisor's target_mass): the one the report states.
                mass = float(payload["mass_g"])
                quantity = "mass_weighed" if payload.get("final") else "mass_settled"
                self.write_fused(stamp, quantity, "g", mass, 1.0, ["sensor"], [mass], [1.0], [], msg.subtask_id)
            elif msg.symbol == "dissolved" and payload.get("dissolution_time_s") is not None:
                self.store.add_raw(self.experiment_id, stamp=stamp, channel="vision", sensor=msg.sender,
                                   quantity="dissolution_time_s", value=float(payload["dissolution_time_s"]),
                                   unit="s", confidence=1.0, fsm_state=self.fsm_state, subtask_id=msg.subtask_id)
                self.store.flush()
            elif msg.symbol in ("endpoint", "verified"):
                for key, unit in (("ph", "pH"), ("temperature_c", "degC")):
                    if payload.get(key) is not None:
                        self.store.add_raw(self.experiment_id, stamp=stamp, channel="vision", sensor=msg.sender,
                                           quantity=f"{key}_at_{msg.symbol}", value=float(payload[key]), unit=unit,
                                           confidence=1.0, fsm_state=self.fsm_state, subtask_id=msg.subtask_id)
            elif msg.symbol == "artifact":
                self.store.add_artifact(self.experiment_id, stamp=stamp, kind=payload.get("kind", "file"),
                                        path=payload.get("path", ""), label=payload.get("label", ""))
                self.store.flush()

    def on_anomaly(self, msg):
        with self.lock:
            if self.store is None:
                return
            stamp = to_sec(msg.stamp)
            self.store.add_anomaly(self.experiment_id, stamp=stamp, source=msg.source, kind=msg.kind,
                                   severity=msg.severity, description=msg.description,
                                   # agents below the supervisor (dispenser, audio) do not know the FSM state
                                   fsm_state=msg.fsm_state or self.fsm_state,
                                   subtask_id=msg.subtask_id, response=msg.response, resolved=msg.resolved)
            if msg.kind == "audio_noise":
                # The microphone was deaf from the noise's onset (this stamp) to its end (the resolution).
                if msg.resolved:
                    self.fuser.close_gate("audio", stamp)
                else:
                    for at, result in self.fuser.open_gate("audio", stamp, msg.kind, self.fsm_state):
                        self.write_carried(at, result, self.subtask_id)
            else:
                self.fuser.add_failure(stamp, msg.kind, msg.severity)
            self.store.flush()

    def on_audio_event(self, msg):
        with self.lock:
            if self.store is None:
                return
            self.store.add_audio_event(self.experiment_id, stamp=to_sec(msg.stamp), event_id=msg.event_id,
                                       kind=msg.kind, classification=msg.classification, start=to_sec(msg.start),
                                       end=to_sec(msg.end), snr_db=msg.snr_db,
                                       peak_frequency_hz=msg.peak_frequency_hz, quantity=msg.quantity,
                                       confidence=msg.confidence)

    # ------------------------------------------------------------------ outputs
    def write_carried(self, stamp, result, subtask):
        """A per-drop record the statistical channel carries while the audio channel is gated."""
        self.write_fused(stamp, "titrant_volume", "mL", result.value, result.confidence, list(result.channels),
                         list(result.channel_values), list(result.channel_confidences),
                         list(result.quality_flags), subtask)

    def write_fused(self, stamp, quantity, unit, value, confidence, channels, values, confidences, flags, subtask):
        seq = self.store.add_fused(self.experiment_id, stamp=stamp, quantity=quantity, unit=unit, value=value,
                                   confidence=confidence, channels=channels, channel_values=values,
                                   channel_confidences=confidences, fsm_state=self.fsm_state,
                                   subtask_id=subtask, quality_flags=flags)
        self.store.flush()  # durable before acknowledged
        self.record_pub.publish(FusedRecord(
            stamp=to_msg(stamp), experiment_id=self.experiment_id, seq=int(seq), quantity=quantity, unit=unit,
            value=float(value) if math.isfinite(value) else float("nan"), confidence=float(confidence),
            channels=channels, channel_values=[float(v) for v in values],
            channel_confidences=[float(c) for c in confidences], fsm_state=self.fsm_state, subtask_id=subtask,
            quality_flags=list(flags)))

    def store_failure(self, kind, description):
        self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=self.experiment_id,
                                              source=self.get_name(), kind=kind, severity="warn",
                                              description=description, response="adjustment"))

    def query(self, request, response):
        with self.lock:
            store = self.store
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

    def close_store(self):
        if self.store is not None:
            self.store.flush()
            self.store.close()
            self.store = None

    def destroy_node(self):
        with self.lock:
            self.close_store()
        super().destroy_node()


def main(args=None):
    spin_node(RecorderNode, args)


if __name__ == "__main__":
    main()
