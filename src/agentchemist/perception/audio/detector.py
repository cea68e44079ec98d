"""Streaming contact-audio event detector: int16 chunks in, classified events out.

Pipeline per chunk: continuity check (a gap restarts the filter and closes an open event, an overlap is
trimmed) -> Butterworth band-pass with state carried across chunks -> short-time energy frames on
absolute sample indices -> Segmenter (adaptive floor, threshold, hysteresis, refractory) -> for every
closed segment: onset refinement, features, classification, confidence.

Because filtering is causal with carried state and frames sit on absolute sample indices, the events
do not depend on how the stream is chunked. Latency: an event is emitted release_hold_s + one frame
after its end (about 25 ms with the defaults) plus up to min_block samples of input buffering (10 ms),
or at max_event_s for long sounds. While drops are expected (``drops_expected``, set by the caller) a
droplet is told decide_after_s (30 ms) after its onset, while it still rings: a drop rings for 30-200 ms
above the floor, and the dispenser counts drops as they land.

Example::

    det = StreamingDetector()
    for t0, chunk in stream:           # int16 mono, 48 kHz
        for ev in det.process(chunk, t0):
            print(ev.kind, ev.onset)
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import ndimage, signal

from .backends import AudioBackend
from .chunks import INT16_FULL_SCALE, chunk_duration, chunk_problems, to_mono
from .classifier import RuleClassifierConfig, class_probabilities, decide
from .config import DetectorConfig
from .errors import AudioInputError, DetectorConfigError
from .events import DETECTED_KINDS, DetectedEvent, OngoingSound
from .features import RingBefore, extract_features, frame_energy_db
from .segmenter import MIN_FLOOR_DB, Segment, Segmenter

_ONSET_ENV_S = 0.0005  # smoothing of the envelope used to find the transient's peak
_CUSUM_DRIFT = 2.0  # onset change point: samples above twice the noise power count as signal


class _Tape:
    """Recent raw and band-passed samples on absolute indices (amortised appends, trimming)."""

    def __init__(self) -> None:
        self.start = 0
        self._raw = np.empty(0)
        self._filt = np.empty(0)
        self._off = 0
        self._n = 0

    @property
    def end(self) -> int:
        return self.start + self._n

    def clear(self, at: int) -> None:
        self.start, self._off, self._n = at, 0, 0

    def append(self, raw: np.ndarray, filt: np.ndarray) -> None:
        need = self._off + self._n + raw.size
        if need > self._raw.size:
            cap = max(2 * (self._n + raw.size), 1 << 15)
            nr, nf = np.empty(cap), np.empty(cap)
            nr[: self._n] = self._raw[self._off: self._off + self._n]
            nf[: self._n] = self._filt[self._off: self._off + self._n]
            self._raw, self._filt, self._off = nr, nf, 0
        a = self._off + self._n
        self._raw[a: a + raw.size] = raw
        self._filt[a: a + raw.size] = filt
        self._n += raw.size

    def get(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(raw, filtered, first index) for absolute [a, b) clipped to what is held."""
        a = max(a, self.start)
        b = min(b, self.end)
        i, j = self._off + a - self.start, self._off + max(a, b) - self.start
        return self._raw[i:j], self._filt[i:j], a

    def trim(self, keep_from: int) -> None:
        drop = min(max(0, keep_from - self.start), self._n)
        self.start += drop
        self._off += drop
        self._n -= drop


class StreamingDetector:
    """Detects and classifies contact-audio events in a chunked int16 stream (see module docstring)."""

    def __init__(self, config: DetectorConfig = DetectorConfig(), *,
                 classifier: RuleClassifierConfig = RuleClassifierConfig(),
                 backend: AudioBackend | None = None) -> None:
        if not isinstance(config, DetectorConfig):
            raise DetectorConfigError(f"config must be a DetectorConfig, got {type(config).__name__}")
        self.config = config
        self.classifier = classifier
        self.backend = backend
        self._sos = signal.butter(config.filter_order, config.band_hz, btype="bandpass",
                                  fs=config.sample_rate, output="sos")
        self._zi0 = signal.sosfilt_zi(self._sos)
        self._pre_roll = config.samples(config.pre_roll_s)
        self._ongoing: tuple[int, OngoingSound] | None = None  # (open event start, its judgement)
        self._count = 0
        self._validated_end: float | None = None
        # Set by the caller while drops are expected (a dispenser squeezes): only then is a droplet told
        # before its ring ends (DetectorConfig.decide_after_s). The first tens of ms of a pour's grains
        # or a clink against glass can sound like a drop; where none is expected, the whole sound is heard
        # first, and a false early verdict would be a false alarm.
        self.drops_expected = False
        self.reset()

    # ------------------------------------------------------------------ public API
    @property
    def noise_floor_db(self) -> float:
        """Current noise floor: band-passed frame energy, dB re full scale (NaN before warm-up)."""
        f = self._seg.floor_db
        return math.nan if f is None else f

    def reset(self) -> None:
        """Forget the stream entirely (floor, filter, open event); event ids keep counting."""
        self._seg = Segmenter(self.config)
        self._tape = _Tape()
        self._zi: np.ndarray | None = None
        self._next: int | None = None  # absolute index of the next expected sample
        self._next_frame = 0
        self._pending: list[np.ndarray] = []  # received, not yet filtered (see DetectorConfig.min_block)
        self._pending_n = 0
        self._split: Segment | None = None  # the first part of a segment split at a second impact
        self._split_told: DetectedEvent | None = None  # ... the droplet told for it before it closed
        self._judged: int | None = None  # start of the open event judged before it closed ...
        self._told: DetectedEvent | None = None  # ... and the droplet told for it, if that was the verdict
        self._last_ring: tuple[int, float, float] | None = None  # last droplet: (peak sample, dB over floor, decay s)

    def ongoing(self, min_duration_s: float) -> OngoingSound | None:
        """The sound still going on, once it has lasted `min_duration_s` (else None): a droplet's energy
        is over within tens of ms, so a long open event is something else, and the audio supervisor need
        not wait for it to end (or to be cut at max_event_s) to know. Judged once per open event, on the
        audio up to the first call that finds it long enough."""
        start = self._seg.active_start
        if start is None:
            return None
        c = self.config
        end = self._tape.end
        duration = (end - start) / c.sample_rate
        if duration < min_duration_s:
            return None
        if self._ongoing is not None and self._ongoing[0] == start:
            return replace(self._ongoing[1], duration_s=duration)
        key = start
        if self._split is not None:
            # a second impact whose first part is held: heard from the quiet before the first (against the
            # first's ring as its background, a broadband noise would look tonal)
            start = self._split.start
        raw, filt, first = self._tape.get(start - self._pre_roll, end)
        floor = self._seg.floor_db if self._seg.floor_db is not None else MIN_FLOOR_DB
        peak = self._seg.active_peak_db if self._seg.active_peak_db is not None else floor
        feats = extract_features(raw, filt, start - first, end - first, c.sample_rate, floor, peak, c.band_hz,
                                 c.clip_level / INT16_FULL_SCALE)
        continued = self._seg.active_continued
        kind, _ = decide(class_probabilities(feats, continued=continued, config=self.classifier))
        sound = OngoingSound(start=start / c.sample_rate, duration_s=duration, kind=kind, flatness=feats.flatness,
                             level_db=peak - floor, continued=continued)
        self._ongoing = (key, sound)
        return sound

    def validate_chunk(self, samples: object, sample_rate: int, channels: int, t0: float) -> list[str]:
        """Problems with a chunk as "code: detail" strings (empty list = clean); see chunks.chunk_problems.

        Tracks continuity against the previous validated chunk; the caller raises the anomalies."""
        problems = chunk_problems(samples, sample_rate, channels, t0, self.config, self._validated_end)
        dur = chunk_duration(samples, sample_rate, channels)
        if dur is not None and not any(p.startswith("bad_time") for p in problems):
            self._validated_end = float(t0) + dur
        return problems

    def process(self, samples: object, t0: float, *, sample_rate: int | None = None,
                channels: int | None = None) -> list[DetectedEvent]:
        """Feed one chunk starting at stream time ``t0`` (s); return the events that closed in it.

        ``sample_rate``/``channels`` describe the chunk when known: a chunk at the wrong rate or that
        cannot be read as int16 audio is skipped (the next chunk then starts after a gap). Never raises
        on sensor faults; a non-finite t0 is a programming error (AudioInputError)."""
        if isinstance(t0, bool) or not isinstance(t0, (int, float)) or not math.isfinite(t0):
            raise AudioInputError(f"process(): chunk start time t0 must be a finite number of s, got {t0!r}")
        if sample_rate is not None and sample_rate != self.config.sample_rate:
            return []
        x = to_mono(samples, channels)
        if x is None or x.size == 0:
            return []
        out: list[DetectedEvent] = []
        idx0 = int(round(t0 * self.config.sample_rate))
        tol = self.config.samples(self.config.continuity_tol_s)
        jumped_back = self._next is not None and self._next - idx0 > self.config.samples(self.config.time_jump_s)
        if self._next is None:
            self._restart(idx0)
        elif idx0 - self._next > tol or jumped_back:  # gap or clock reset: what was open ends here
            out += self._drain()
            out += self._finalise_all([self._seg.close(self._tape.end)])
            self._restart(idx0)
        elif self._next - idx0 > tol:  # overlap: these samples were already heard
            skip = self._next - idx0
            if skip >= x.size:
                return out
            x = x[skip:]
            idx0 = self._next
        else:
            idx0 = self._next  # sub-ms jitter in stamps: treat as contiguous
        self._pending.append(x)
        self._pending_n += x.size
        self._next = idx0 + x.size
        if self._pending_n >= self.config.min_block:
            out += self._drain()
        return out

    def flush(self) -> list[DetectedEvent]:
        """End of stream: process buffered audio, close and return an event still open (flagged truncated)."""
        if self._next is None:
            return []
        out = self._drain()
        out += self._finalise_all([self._seg.close(self._tape.end)])
        self._restart(self._tape.end)
        self._next = None
        return out

    # ------------------------------------------------------------------ internals
    def _drain(self) -> list[DetectedEvent]:
        """Filter the buffered samples and run the frames they complete."""
        if not self._pending:
            return []
        x = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        self._pending, self._pending_n = [], 0
        if self._zi is None:
            self._zi = self._zi0 * x[0]  # steady state for the first sample: no start-up click
        y, self._zi = signal.sosfilt(self._sos, x, zi=self._zi)
        self._tape.append(x, y)
        return self._run_frames()

    def _restart(self, at: int) -> None:
        self._tape.clear(at)
        self._zi = None
        self._next_frame = at
        self._seg.restart(at)

    def _run_frames(self) -> list[DetectedEvent]:
        c = self.config
        avail = self._tape.end - self._next_frame - c.frame
        if avail < 0:
            return []
        m = avail // c.hop + 1
        _, y, _ = self._tape.get(self._next_frame, self._next_frame + (m - 1) * c.hop + c.frame)
        energies = frame_energy_db(y, c.frame, c.hop)
        starts = self._next_frame + c.hop * np.arange(m)
        self._next_frame += m * c.hop
        out = self._finalise_all(self._seg.feed(starts, energies))
        out += self._judge_open()
        # the open event and a held first part of a split one are still to be judged
        held = [self._seg.active_start, self._split.start if self._split is not None else None]
        keep = min([self._next_frame] + [h for h in held if h is not None])
        # keep what the onset search (2 frames back) and the pre-roll of a future event may need
        self._tape.trim(keep - self._pre_roll - 2 * c.frame - c.hop)
        return out

    def _judge_open(self) -> list[DetectedEvent]:
        """Tell a droplet before its ring ends: the open event is judged once, on its first decide_after_s;
        a droplet verdict is the event (its end is then the end of that window), anything else waits for
        the whole sound (see DetectorConfig.decide_after_s)."""
        c = self.config
        start = self._seg.active_start
        if (not self.drops_expected or c.decide_after_s <= 0 or start is None or start == self._judged
                or self._seg.active_continued):
            return []
        end = start + c.samples(c.decide_after_s)
        if self._tape.end < end:
            return []
        # exactly that window, however the stream was chunked: its peak is that of the frames heard in it
        # (the segmenter's may already count later ones)
        _, filt, _ = self._tape.get(start, end)
        peaks = frame_energy_db(filt, c.frame, c.hop)
        seg = self._seg.so_far(end)
        assert seg is not None
        if peaks.size:
            seg = replace(seg, peak_db=float(np.max(peaks)))
        if seg.reonset and self._split_told is None:
            return []  # a second impact whose first part is not yet judged: judged with it when it closes
        self._judged, self._told = start, None
        count = self._count
        event = self._finalise(seg, reonset=seg.reonset, partial=True)
        if event.kind != "droplet" or (seg.reonset and not self._second_impact(self._split_told, event)):
            self._count = count
            return []
        self._told = replace(event, flags=event.flags + ("early",))
        return self._heard([self._told])

    def _second_impact(self, first: DetectedEvent | None, second: DetectedEvent) -> bool:
        """A second part's impact (its refined onset) comes reonset_after_s or more after the first's: one
        sooner is the first impact's own ring rising out of a beat null, whatever the frames suggested."""
        return first is None or second.onset - first.onset >= self.config.reonset_after_s

    def _told_early(self, seg: Segment) -> DetectedEvent | None:
        """The droplet already told for the open event that closed as ``seg``, if one was."""
        told = self._told if seg.start == self._judged else None
        if seg.start == self._judged:
            self._judged, self._told = None, None
        return told

    def _finalise_all(self, segments: list[Segment | None]) -> list[DetectedEvent]:
        out: list[DetectedEvent] = []
        for seg in segments:
            if seg is None:
                continue
            told = self._told_early(seg)
            if seg.split:  # judged with the second impact that cut it
                self._split, self._split_told = seg, told
            elif seg.reonset and self._split is not None:
                out += self._heard(self._finalise_split(self._split, seg, told is not None))
                self._split, self._split_told = None, None
            elif told is None:
                out += self._heard([self._finalise(seg)])
            elif self._outlasts_a_ring(seg):
                # another sound (a noise burst, a pour) began inside the ring of the droplet told: the whole
                # sound is judged, and told too unless it is a droplet
                count = self._count
                whole = self._finalise(seg)
                if whole.kind == "droplet":
                    self._count = count
                else:
                    out.append(replace(whole, flags=whole.flags + ("after_early",)))
        return out

    def _outlasts_a_ring(self, seg: Segment) -> bool:
        """A sound longer than any drop rings (DetectorConfig.told_max_s, or cut at max_event_s)."""
        return seg.cut or seg.end - seg.start > self.config.samples(self.config.told_max_s)

    def _heard(self, events: list[DetectedEvent]) -> list[DetectedEvent]:
        """Events as they are told; the last droplet's ring is remembered (see features.RingBefore)."""
        for e in events:
            f = e.features
            if e.kind == "droplet" and f is not None:
                sr = self.config.sample_rate
                # the fitted ring; a droplet without one (a drop's fit over noise) decays as its centroid says
                decay = f.decay_s if f.decay_s < 1.0 else 2.0 * f.centroid_s
                self._last_ring = (int(round((e.onset + f.attack_s) * sr)), f.snr_db, decay)
        return events

    def _finalise_split(self, first: Segment, second: Segment, second_told: bool = False) -> list[DetectedEvent]:
        """Two drops landing tens of ms apart ring as one sound with two impacts: they are two droplets
        when both parts are heard as droplets (the second judged as an impact in the first one's ring)
        and the second impact comes reonset_after_s or more after the first. Otherwise the split stands
        for nothing (the grains of a pour, a bump in a ring, a beating ring): one event, as if the
        segment had not been cut. A first part already told as a droplet stands: the second is told
        when it is a droplet too (if it was not already), or when it goes on longer than any drop rings
        (another sound began in the ring); otherwise it is that droplet's ring."""
        if self._split_told is not None:
            if second_told:
                return []
            count = self._count
            b = self._finalise(second, reonset=True)
            if b.kind == "droplet" and self._second_impact(self._split_told, b):
                return [b]
            self._count = count
            if b.kind != "droplet" and self._outlasts_a_ring(second):
                # a sound that began in its ring: judged whole, from the quiet before the drop (against
                # the drop's ring as its background, a broadband noise would look tonal)
                whole = self._finalise(Segment(first.start, second.end, max(first.peak_db, second.peak_db),
                                               first.floor_db, first.continued, cut=second.cut,
                                               truncated=second.truncated))
                if whole.kind != "droplet":
                    return [replace(whole, flags=whole.flags + ("after_early",))]
                self._count = count
            return []
        count = self._count
        a = self._finalise(first)
        if a.kind == "droplet":
            b = self._finalise(second, reonset=True)
            if b.kind == "droplet" and self._second_impact(a, b):
                return [a, b]
        self._count = count
        whole = Segment(first.start, second.end, max(first.peak_db, second.peak_db), first.floor_db,
                        first.continued, cut=second.cut, truncated=second.truncated)
        return [self._finalise(whole)]

    def _finalise(self, seg: Segment, *, reonset: bool = False, partial: bool = False) -> DetectedEvent:
        c = self.config
        sr = c.sample_rate
        onset = seg.start if seg.continued else self._refine_onset(seg)
        raw, filt, first = self._tape.get(onset - self._pre_roll, seg.end)
        floor = seg.floor_db
        ring = None
        if self._last_ring is not None and self._last_ring[0] < onset:
            peak, level, decay = self._last_ring
            ring = RingBefore(peak_s=(onset - peak) / sr, level_db=level, decay_s=decay)
        feats = extract_features(raw, filt, onset - first, seg.end - first, sr, floor, seg.peak_db,
                                 c.band_hz, c.clip_level / INT16_FULL_SCALE, ring)
        probs = class_probabilities(feats, continued=seg.continued, reonset=reonset, partial=partial,
                                    config=self.classifier)
        kind, margin = decide(probs)
        flags: list[str] = []
        if feats.clip_fraction > 0:
            flags.append("clipped")
        if seg.truncated:
            flags.append("truncated")
        if seg.continued:
            flags.append("continued")
        if seg.cut:
            flags.append("cut")
        if reonset:
            flags.append("reonset")
        self._count += 1
        start_s = min(seg.start, onset) / sr
        event = DetectedEvent(event_id=f"{c.id_prefix}-{self._count:06d}", start=start_s, end=seg.end / sr,
                              onset=onset / sr, kind=kind, margin=margin, snr_db=feats.snr_db,
                              peak_frequency_hz=feats.peak_frequency_hz, decay_s=feats.decay_s,
                              confidence=0.0, flags=tuple(flags), features=feats)
        p_top = probs[kind]
        if self.backend is not None:
            kind, margin, p_top = self._ask_backend(raw, event, kind, margin, p_top, flags)
        return DetectedEvent(event_id=event.event_id, start=event.start, end=event.end, onset=event.onset,
                             kind=kind, margin=margin, snr_db=event.snr_db,
                             peak_frequency_hz=event.peak_frequency_hz, decay_s=event.decay_s,
                             confidence=self._confidence(p_top, feats.snr_db, flags), flags=tuple(flags),
                             features=feats)

    def _ask_backend(self, raw: np.ndarray, event: DetectedEvent, kind: str, margin: float, p_top: float,
                     flags: list[str]) -> tuple[str, float, float]:
        clip = np.clip(np.round(raw * INT16_FULL_SCALE), -32768, 32767).astype(np.int16)
        try:
            b_kind, b_margin = self.backend.classify(clip, self.config.sample_rate, event)  # type: ignore[union-attr]
            b_margin = float(b_margin)
            if b_kind not in DETECTED_KINDS or not 0.0 <= b_margin <= 1.0:
                raise ValueError(f"backend answered ({b_kind!r}, {b_margin!r})")
        except Exception:  # noqa: BLE001 - a failing model must not take the supervisor down
            flags.append("backend_error")
            return kind, margin, p_top
        return b_kind, b_margin, 0.5 * (1.0 + b_margin)

    def _confidence(self, p_top: float, snr_db: float, flags: list[str]) -> float:
        """Class probability x SNR term (0.5 two dB below the threshold) x quality penalties."""
        z = (snr_db - (self.config.threshold_db - 2.0)) / 2.0
        snr_term = 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0
        quality = 1.0
        if "clipped" in flags:
            quality *= 0.5
        if "truncated" in flags:
            quality *= 0.6
        if "backend_error" in flags:
            quality *= 0.8
        return float(min(1.0, max(0.0, p_top * snr_term * quality)))

    def _refine_onset(self, seg: Segment) -> int:
        """Sample-accurate onset: the change point from noise to signal before the transient's peak.

        S(n) = sum over i <= n of (y_i^2 / noise power - 2) falls in noise (mean 1 - 2 < 0) and rises
        once the event is louder than the noise; its minimum before the peak is the onset. A cumulative
        statistic copes with envelopes that build up over several ms (beating partials), where the
        energy frame crosses the threshold late."""
        c = self.config
        sr = c.sample_rate
        lo = seg.start - 2 * c.frame
        hi = min(seg.start + c.frame + int(0.005 * sr), seg.end)
        _, y, first = self._tape.get(lo, hi)
        if y.size < 2:
            return seg.start
        win = max(1, int(round(_ONSET_ENV_S * sr)))
        env = ndimage.uniform_filter1d(y * y, win, mode="nearest")
        p = max(seg.start - first, 0) + int(np.argmax(env[max(seg.start - first, 0):]))
        # a second impact rises out of the ring before it, not out of the room's noise
        base = seg.base_db if seg.base_db is not None else seg.floor_db
        noise_power = 10.0 ** (max(base, MIN_FLOOR_DB) / 10.0)
        cusum = np.cumsum(y[: p + 1] ** 2 / noise_power - _CUSUM_DRIFT)
        return first + int(np.argmin(cusum)) + 1 if cusum.size > 1 else first
