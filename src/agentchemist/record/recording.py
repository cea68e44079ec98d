"""One experiment's record: what the recorder keeps of each observation and which records it makes.

The recorder node turns messages into the typed inputs below and publishes what comes back; every rule
of what is stored lives here (no ROS, no clock: times are the inputs' stamps, `now` only where an input
has none):

- every estimate, reading, anomaly and audio event is kept raw; late (out-of-order) ones are flagged
  and kept out of fusion (StampOrder);
- titrant volume: each drop heard by the audio channel is fused with the statistical channel's
  estimate (VolumeFuser); while an ``audio_noise`` anomaly gates the microphone the statistical channel
  carries the per-drop records; other anomalies reduce every channel's confidence around their stamp;
- pH and temperature go through the single-source filter and make a record every `ph_record_period`;
  the balance, the only source of mass, makes one from its reading at the same period;
- the agents' messages: ``ph_stable`` -> ph_settled, ``mass_settled`` -> mass_settled or (``final``)
  mass_weighed, ``dissolved`` -> a raw dissolution time, ``endpoint``/``verified`` -> raw pH and
  temperature at that moment, ``artifact`` -> an artifact row;
- a terminal FSM state finishes the experiment, once: the run's outcome is judged there
  (agentchemist.record.outcome: completed, completed_with_gap or aborted, from the terminal state and this
  experiment's anomalies) and the store keeps its status word (completed when accepting, else aborted);
  an anomaly of the experiment heard after that which changes the verdict (a halt published with the
  terminal state can arrive after it) revises the outcome: :meth:`Recording.take_revision`.

A record is published only after it is durable in the store (the publication is the acknowledgement).
Each :class:`Record` returned is queued in the store, not yet durable: the caller flushes the store (or
closes it) before it publishes them. The recorder node does that once per status period for every record
made since; a flush per record made the one-process graph wait for an fsync about 12,000 times in a
titration (22 s of a 300 s profiled run).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from agentchemist.contracts import AnomalyKind, Severity, Symbol
from agentchemist.contracts.admission import REFUSAL_KINDS
from agentchemist.contracts.notes import Artifact, Dissolved, Endpoint, MassSettled, PhStable, Verified, note_from

from agentchemist.params import param
from agentchemist.contracts.outcome import RunOutcome
from agentchemist.record.ordering import StampOrder
from agentchemist.record.outcome import judge
from agentchemist.record.plausibility import from_plan
from agentchemist.record.single_source import PH_FILTER, TEMPERATURE_FILTER, SingleSourceFilter
from agentchemist.record.store import RecordStore, open_store, run_database_path, run_folder
from agentchemist.record.volume_fusion import VolumeFuser

KNOWN_CHANNELS = ("statistical", "audio", "sensor", "vision")
#: the notes the recorder keeps something of (any other message addressed to it is not recorded)
RECORDED_NOTES = frozenset({Symbol.PH_STABLE, Symbol.MASS_SETTLED, Symbol.DISSOLVED, Symbol.ENDPOINT, Symbol.VERIFIED,
                            Symbol.ARTIFACT})
#: the record name of each filtered single-source quantity
FILTERED = {"pH": "ph", "temperature": "temperature"}


@dataclass(frozen=True)
class RecorderConfig:
    runs_dir: str = param("runs", description="Folder of the experiment run folders (runs/<experiment_id>/)")
    store_url: str = param("", description="'' = SQLite at runs/<id>/records.db; or sqlite:///path.db or "
                                           "postgresql://...")
    ph_record_period: float = param(1.0, unit="s", low=0.0, high=60.0,
                                    description="Time between smoothed pH (and temperature, mass) records")
    status_period_s: float = param(0.5, unit="s", low=0.05, high=10.0, description=(
        "Period of the recorder's status (RecorderStatus): the supervisor holds dispensing when it stops"))

    def store_url_for(self, experiment_id: str) -> str:
        """The store of one experiment; RecordInputError for an id that cannot name a run folder (checked
        with a store_url too: the id still names the run's artifacts)."""
        path = run_database_path(self.runs_dir, experiment_id)
        return self.store_url or str(path)


# ---------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Notice:
    """An anomaly the recording raises about its data (the node publishes it)."""
    kind: str
    severity: str
    description: str
    stamp: float
    resolved: bool = False


@dataclass(frozen=True)
class FsmUpdate:
    experiment_id: str
    stamp: float
    state: str
    previous_state: str
    symbol: str
    subtask_id: str
    accepting: bool
    terminal: bool


@dataclass(frozen=True)
class Estimate:
    """A channel's estimate of a quantity (dispenser, audio, vision)."""
    stamp: float
    channel: str
    quantity: str
    value: float
    unit: str
    confidence: float
    delta: float
    event_id: str
    fsm_state: str
    subtask_id: str


@dataclass(frozen=True)
class Reading:
    """An instrument reading (pH meter, balance)."""
    stamp: float
    sensor: str
    quantity: str
    value: float
    unit: str
    self_check_ok: bool
    noise: float


@dataclass(frozen=True)
class AgentNote:
    """An agent's message addressed to the recorder; `payload`: its decoded payload (read as the symbol's note)."""
    experiment_id: str
    stamp: float
    sender: str
    symbol: str
    subtask_id: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class AnomalyNote:
    stamp: float
    source: str
    kind: str
    severity: str
    description: str
    fsm_state: str
    subtask_id: str
    response: str
    resolved: bool
    experiment_id: str = ""   #: the run it is about ('' or another's: stored, but not judged as this run's)


@dataclass(frozen=True)
class AudioEventNote:
    stamp: float
    event_id: str
    kind: str
    classification: str
    start: float
    end: float
    snr_db: float
    peak_frequency_hz: float
    quantity: float
    confidence: float


@dataclass(frozen=True)
class DispenserNote:
    """The dispenser's own state (DispenserState): what it did when, as it says, not as anyone derives it."""
    experiment_id: str
    stamp: float
    subtask_id: str
    mode: str
    state: str
    previous_state: str
    reason: str
    active: bool
    drop_interval_s: float
    priming: bool
    dispensed_ml: float
    drops: int


# --------------------------------------------------------------------------------------------- outputs
@dataclass(frozen=True)
class Record:
    """A fused record, durable in the store: publish it."""
    experiment_id: str
    seq: int
    stamp: float
    quantity: str
    unit: str
    value: float
    confidence: float
    channels: tuple
    channel_values: tuple
    channel_confidences: tuple
    fsm_state: str
    subtask_id: str
    quality_flags: tuple


@dataclass(frozen=True)
class Closed:
    """The experiment was finished in the store: tell the summarizer where it is, and everyone how it ended."""
    experiment_id: str
    stamp: float
    status: str      # completed | aborted (the store's word for the outcome)
    store: str
    outcome: RunOutcome


class Recording:
    """The record of one experiment in `store` (see the module docstring)."""

    def __init__(self, experiment_id: str, store: RecordStore, config: RecorderConfig = RecorderConfig(), *,
                 url: str = "", previous: Recording | None = None, plan: dict | None = None):
        self.experiment_id = experiment_id
        # A pH reading no drop explains is flagged and kept out of the records (record/plausibility.py).
        self.plausible = from_plan(plan) if isinstance(plan, dict) else None
        self.implausible = False   # an episode of implausible readings is open
        self.notices: list[Notice] = []  # anomalies for the node to publish
        self.dispenser_drops: dict[str, int] = {}  # drops each dispensing goal has counted
        self.store = store
        self.url = url
        self.config = config
        self.closed = False
        self.anomalies: list[AnomalyNote] = []  # this experiment's, in arrival order: what the judge reads
        self.terminal: FsmUpdate | None = None   # the state the experiment ended in (None: running)
        self.outcome: RunOutcome | None = None   # the verdict (None: not closed yet)
        self.revision: Closed | None = None      # a verdict changed after the close, not yet taken
        self.fuser = VolumeFuser()
        self.order = StampOrder()
        # The FSM state heard last, the sensors' filters and when each made its last record follow the bench,
        # not one experiment: they carry over from the previous recording (until this experiment's first
        # FSM state arrives, records keep the state heard last).
        if previous is not None:
            self.fsm_state, self.subtask_id = previous.fsm_state, previous.subtask_id
            self.filters, self.last_record = previous.filters, previous.last_record
        else:
            self.fsm_state, self.subtask_id = "", ""
            self.filters = {"pH": SingleSourceFilter(PH_FILTER), "temperature": SingleSourceFilter(TEMPERATURE_FILTER)}
            self.last_record: dict[str, float] = {}

    @classmethod
    def open(cls, config: RecorderConfig, experiment_id: str, *, now: float, instruction: str = "",
             plan_json: str = "", previous: Recording | None = None, on_failure=None,
             calendar: str = "") -> Recording:
        """Open the experiment's store (SQLite in its run folder unless `config.store_url` names one),
        start the experiment with its plan and make that durable. `now` is the plan's stamp; `calendar` the
        caller's ISO 8601 wall-clock time beside it (the core reads no clock)."""
        url = config.store_url_for(experiment_id)
        folder = run_folder(config.runs_dir, experiment_id)
        folder.mkdir(parents=True, exist_ok=True)
        # The spill (rows the database could not take yet) lives in the run's folder whatever the store,
        # so a run whose database stayed down is found, and reported, where its other files are.
        spill = None if not config.store_url else folder / SPILL_NAME
        store = open_store(url, spill_path=spill, on_failure=on_failure, put_timeout_s=PUT_LIMIT_S)
        try:
            plan = json.loads(plan_json)
        except json.JSONDecodeError:
            plan = {"unparsed": plan_json}
        # The run clock may be simulated; the calendar time beside it is what a reader dates the run by.
        # A recorder restarted during the run reopens it: its start stays the first one.
        metadata = {"plan": plan}
        if calendar and not store.knows(experiment_id):
            metadata.update(calendar_start=calendar, calendar_start_run_s=now)
        store.start_experiment(experiment_id, now=now, instruction=instruction, metadata=metadata)
        store.flush()
        return cls(experiment_id, store, config, url=url, previous=previous, plan=plan)

    def stop_unfinished(self, now: float, reason: str) -> None:
        """The stop record of an experiment whose record is closed before its terminal state (another
        experiment superseded it): aborted, with why; nothing when it has its stop record already."""
        if not self.closed and not self.store.closed:
            self.store.finish_experiment(self.experiment_id, now=now, status="aborted", reason=reason)
            self.closed = True

    def close(self) -> str:
        """Flush and close the store; '' or a sentence saying that rows are still only in the spill file
        (the database stayed down: `agentchemist report` replays them when it is back)."""
        self.store.flush()
        self.store.close()
        return unreplayed_spill(self.store.spill.path)

    # ------------------------------------------------------------------ inputs
    def on_fsm(self, msg: FsmUpdate, calendar: str = "") -> Closed | None:
        if msg.experiment_id != self.experiment_id:
            return None
        if msg.previous_state or msg.symbol:
            self.store.add_transition(self.experiment_id, stamp=msg.stamp, from_state=msg.previous_state,
                                      to_state=msg.state, symbol=msg.symbol, subtask_id=msg.subtask_id,
                                      agent="vision_supervisor")
        self.fsm_state, self.subtask_id = msg.state, msg.subtask_id
        if not msg.terminal or self.closed:
            return None
        self.terminal = msg
        outcome = self.outcome = judge(msg.state, msg.accepting, self.anomalies)
        status = outcome.status
        if calendar:
            self.store.start_experiment(self.experiment_id, now=msg.stamp,
                                        metadata={"calendar_finish_run_s": msg.stamp, "calendar_finish": calendar})
        self.store.finish_experiment(self.experiment_id, now=msg.stamp, status=status,
                                     reason="" if msg.accepting else f"ended in {msg.state}")
        self.store.flush()
        self.closed = True
        return self._closed(outcome)

    def _closed(self, outcome: RunOutcome) -> Closed:
        return Closed(self.experiment_id, self.terminal.stamp, outcome.status, self.url, outcome)

    def take_revision(self) -> Closed | None:
        """The experiment's close again, with its outcome revised by an anomaly heard after the close (None:
        unchanged). The store's status cannot change (it follows the terminal state): only the verdict does."""
        revision, self.revision = self.revision, None
        return revision

    def on_estimate(self, msg: Estimate) -> list[Record]:
        flags = [] if math.isfinite(msg.value) and 0.0 <= msg.confidence <= 1.0 else ["invalid_input"]
        if msg.channel not in KNOWN_CHANNELS:
            flags.append(f"unknown_channel:{msg.channel}")
        late = self.order.check(f"{msg.channel}/{msg.quantity}", msg.stamp)
        if late:
            flags.append(late)  # stored as raw, excluded from fusion
        self.store.add_raw(self.experiment_id, stamp=msg.stamp, channel=msg.channel, sensor=msg.channel,
                           quantity=msg.quantity, value=msg.value, unit=msg.unit, confidence=msg.confidence,
                           fsm_state=msg.fsm_state or self.fsm_state, subtask_id=msg.subtask_id,
                           flags=flags, payload={"delta": msg.delta, "event_id": msg.event_id})
        if flags or msg.quantity != "titrant_volume":
            return []
        if msg.channel == "statistical":
            return [self._carried(at, result, msg.subtask_id)
                    for at, result in self.fuser.add_statistical(msg.value, msg.confidence, msg.stamp, msg.delta,
                                                                 self.fsm_state)]
        if msg.channel != "audio":
            return []
        result = self.fuser.fuse_drop(msg.value, msg.confidence, msg.stamp, msg.delta, self.fsm_state)
        return [self._carried(msg.stamp, result, msg.subtask_id)]

    def on_reading(self, msg: Reading) -> list[Record]:
        stamp = msg.stamp
        late = self.order.check(f"{msg.sensor}/{msg.quantity}", stamp)
        if late:  # an old or unstamped reading: keep it raw, never feed it to the filter
            self.store.add_raw(self.experiment_id, stamp=stamp, channel="sensor", sensor=msg.sensor,
                               quantity=msg.quantity, value=msg.value, unit=msg.unit, confidence=0.0,
                               fsm_state=self.fsm_state, subtask_id=self.subtask_id, flags=[late])
            return []
        if msg.quantity == "pH" and self._implausible(msg):
            return []
        filt = self.filters.get(msg.quantity)
        filtered = filt.update(msg.value, stamp, msg.self_check_ok, msg.noise) if filt else None
        flags = list(filtered.flags) if filtered else ([] if math.isfinite(msg.value) else ["invalid_input"])
        self.store.add_raw(self.experiment_id, stamp=stamp, channel="sensor", sensor=msg.sensor,
                           quantity=msg.quantity, value=msg.value, unit=msg.unit,
                           confidence=filtered.confidence if filtered else (1.0 if msg.self_check_ok else 0.3),
                           fsm_state=self.fsm_state, subtask_id=self.subtask_id, flags=flags)
        if msg.quantity == "mass" and not flags and msg.self_check_ok:
            # One balance is the only source of mass: its reading is the record (the supervisor's settled
            # values are recorded as mass_settled); the periodic trace is for the chart.
            if not self._due("mass", stamp):
                return []
            return [self._record(stamp, "mass", msg.unit, msg.value, 1.0, ["sensor"], [msg.value], [1.0], [],
                                 self.subtask_id)]
        if filtered is None or filtered.outlier or not math.isfinite(filtered.value):
            return []
        name = FILTERED[msg.quantity]
        if not self._due(name, stamp):
            return []
        return [self._record(stamp, name, msg.unit, filtered.value, filtered.confidence, ["sensor"], [msg.value],
                             [filtered.confidence], flags, self.subtask_id)]

    def _implausible(self, msg: Reading) -> bool:
        """A valid pH reading outside what the drops can explain: kept raw with the flag, no record, one
        anomaly per episode (the next plausible reading resolves it)."""
        if self.plausible is None or not (math.isfinite(msg.value) and msg.self_check_ok):
            return False
        why = self.plausible.check(msg.stamp, msg.value)
        if not why:
            if self.implausible:
                self.implausible = False
                self.notices.append(Notice(AnomalyKind.IMPLAUSIBLE_READING, Severity.INFO,
                                           "pH readings are explained by the drops again", msg.stamp, resolved=True))
            return False
        self.store.add_raw(self.experiment_id, stamp=msg.stamp, channel="sensor", sensor=msg.sensor,
                           quantity=msg.quantity, value=msg.value, unit=msg.unit, confidence=0.0,
                           fsm_state=self.fsm_state, subtask_id=self.subtask_id, flags=["implausible_jump"])
        if not self.implausible:
            self.implausible = True
            self.notices.append(Notice(AnomalyKind.IMPLAUSIBLE_READING, Severity.WARN,
                                       f"{why}: kept out of the records", msg.stamp))
        return True

    def take_notices(self) -> list[Notice]:
        notices, self.notices = self.notices, []
        return notices

    def on_note(self, msg: AgentNote) -> list[Record]:
        if msg.experiment_id != self.experiment_id:
            return []
        if msg.symbol not in RECORDED_NOTES:
            return []
        note = note_from(msg.symbol, msg.payload)  # ValueError on a payload that is not the symbol's note
        stamp = msg.stamp
        if isinstance(note, PhStable) and note.ph is not None:
            ph = float(note.ph)
            return [self._record(stamp, "ph_settled", "pH", ph, 1.0, ["sensor"], [ph], [1.0], [], msg.subtask_id)]
        if isinstance(note, MassSettled) and note.mass_g is not None:
            # The settled mass after each pour pulse, and the weighed mass at the end of the pour (the
            # supervisor's target_mass): the one the report states.
            mass = float(note.mass_g)
            quantity = "mass_weighed" if note.final else "mass_settled"
            return [self._record(stamp, quantity, "g", mass, 1.0, ["sensor"], [mass], [1.0], [], msg.subtask_id)]
        if isinstance(note, Dissolved) and note.dissolution_time_s is not None:
            self.store.add_raw(self.experiment_id, stamp=stamp, channel="vision", sensor=msg.sender,
                               quantity="dissolution_time_s", value=float(note.dissolution_time_s),
                               unit="s", confidence=1.0, fsm_state=self.fsm_state, subtask_id=msg.subtask_id)
            self.store.flush()
        elif isinstance(note, (Endpoint, Verified)):
            for key, unit, value in (("ph", "pH", note.ph), ("temperature_c", "degC", note.temperature_c)):
                if value is not None:
                    self.store.add_raw(self.experiment_id, stamp=stamp, channel="vision", sensor=msg.sender,
                                       quantity=f"{key}_at_{note.SYMBOL.value}", value=float(value), unit=unit,
                                       confidence=1.0, fsm_state=self.fsm_state, subtask_id=msg.subtask_id)
        elif isinstance(note, Artifact):
            self.store.add_artifact(self.experiment_id, stamp=stamp, kind=note.kind, path=note.path,
                                    label=note.label)
            self.store.flush()
        return []

    def on_anomaly(self, msg: AnomalyNote) -> list[Record]:
        self.store.add_anomaly(self.experiment_id, stamp=msg.stamp, source=msg.source, kind=msg.kind,
                               severity=msg.severity, description=msg.description,
                               # agents below the supervisor (dispenser, audio) do not know the FSM state
                               fsm_state=msg.fsm_state or self.fsm_state,
                               subtask_id=msg.subtask_id, response=msg.response, resolved=msg.resolved)
        if msg.experiment_id == self.experiment_id:
            self._judged_again(msg)
        records = []
        if msg.kind == AnomalyKind.AUDIO_NOISE:
            # The microphone was deaf from the noise's onset (this stamp) to its end (the resolution).
            if msg.resolved:
                self.fuser.close_gate("audio", msg.stamp)
            else:
                records = [self._carried(at, result, self.subtask_id)
                           for at, result in self.fuser.open_gate("audio", msg.stamp, msg.kind, self.fsm_state)]
        elif msg.kind not in NOT_ABOUT_VOLUME:
            self.fuser.add_failure(msg.stamp, msg.kind, msg.severity)
        self.store.flush()
        return records

    def _judged_again(self, msg: AnomalyNote) -> None:
        """Keep this experiment's anomaly for the judge; after the close, a changed verdict is a revision."""
        self.anomalies.append(msg)
        if self.terminal is None:
            return
        outcome = judge(self.terminal.state, self.terminal.accepting, self.anomalies)
        if outcome != self.outcome:
            self.outcome = outcome
            self.revision = self._closed(outcome)

    def on_audio_event(self, msg: AudioEventNote) -> None:
        if self.plausible is not None and msg.kind == "droplet":
            self.plausible.drop(msg.start or msg.stamp)
        self.store.add_audio_event(self.experiment_id, stamp=msg.stamp, event_id=msg.event_id, kind=msg.kind,
                                   classification=msg.classification, start=msg.start, end=msg.end,
                                   snr_db=msg.snr_db, peak_frequency_hz=msg.peak_frequency_hz,
                                   quantity=msg.quantity, confidence=msg.confidence)

    def on_dispenser(self, msg: DispenserNote) -> None:
        """Every state the dispenser reports is kept as a raw observation (quantity dispenser_state, value the
        volume its goal had dispensed, the state and why in the payload): the record shows when it squeezed,
        waited, retracted or was held. A calibration (no experiment) or another experiment's goal is not ours."""
        if msg.experiment_id != self.experiment_id:
            return
        counted = self.dispenser_drops.get(msg.subtask_id, 0)
        if self.plausible is not None and msg.drops > counted:
            self.plausible.drop(msg.stamp, msg.drops - counted)
        self.dispenser_drops[msg.subtask_id] = max(counted, msg.drops)
        self.store.add_raw(self.experiment_id, stamp=msg.stamp, channel="dispenser", sensor="dispenser_controller",
                           quantity="dispenser_state", value=msg.dispensed_ml, unit="mL", confidence=1.0,
                           fsm_state=self.fsm_state, subtask_id=msg.subtask_id, payload={
                               "mode": msg.mode, "state": msg.state, "previous_state": msg.previous_state,
                               "reason": msg.reason, "active": msg.active, "drop_interval_s": msg.drop_interval_s,
                               "priming": msg.priming, "drops": msg.drops})

    # ------------------------------------------------------------------ records
    def _due(self, name: str, stamp: float) -> bool:
        """True (and noted) when `name`'s last record is at least a record period old."""
        if stamp - self.last_record.get(name, -1e9) < self.config.ph_record_period:
            return False
        self.last_record[name] = stamp
        return True

    def _carried(self, stamp, result, subtask) -> Record:
        """A titrant volume record from a fusion result (a heard drop, or one the statistical channel
        carries while the audio channel is gated)."""
        return self._record(stamp, "titrant_volume", "mL", result.value, result.confidence, result.channels,
                            result.channel_values, result.channel_confidences, result.quality_flags, subtask)

    def _record(self, stamp, quantity, unit, value, confidence, channels, values, confidences, flags,
                subtask) -> Record:
        channels, values, confidences, flags = list(channels), list(values), list(confidences), list(flags)
        seq = self.store.add_fused(self.experiment_id, stamp=stamp, quantity=quantity, unit=unit, value=value,
                                   confidence=confidence, channels=channels, channel_values=values,
                                   channel_confidences=confidences, fsm_state=self.fsm_state,
                                   subtask_id=subtask, quality_flags=flags)
        return Record(self.experiment_id, int(seq), stamp, quantity, unit, value, confidence, tuple(channels),
                      tuple(values), tuple(confidences), self.fsm_state, subtask, tuple(flags))


#: Anomalies about a sensor or service the dispensed volume does not depend on: they leave the volume
#: channels' confidence alone (a refused pH reading says nothing about the drops).
#: So are the boundary's refusals: the refused message never reached a judge.
NOT_ABOUT_VOLUME = REFUSAL_KINDS | frozenset({AnomalyKind.BAD_READING, AnomalyKind.RECORDER_LOST,
                                              AnomalyKind.RECORD_GAP, AnomalyKind.SPILL_UNREPLAYED})

#: How long a record may wait for room in the store's queue (wall s) before the store counts as stuck: the
#: recorder's callbacks run on the executor every node of the one-process graph shares (30 s blocked it).
PUT_LIMIT_S = 0.5

#: The spill file of a run recorded into PostgreSQL, in the run's folder (SQLite: records.db.spill.jsonl).
SPILL_NAME = "records.spill.jsonl"


def unreplayed_spill(path) -> str:
    """'' when `path` holds no rows, else what is left there (for the shutdown log and the report)."""
    path = Path(path)
    try:
        rows = sum(1 for line in path.open("rb") if line.strip()) if path.exists() else 0
    except OSError as exc:
        return f"spill file {path} cannot be read: {exc}"
    return f"{rows} records were never written to the database; they are in {path}" if rows else ""
