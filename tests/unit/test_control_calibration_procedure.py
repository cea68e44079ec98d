"""The Calibrate service's procedure against an ideal bulb and balance: phases, fit, failures."""
import pytest

from agentchemist.control.calibration import CalibrationError
from agentchemist.control.calibration_procedure import CalibrationProcedure, CalibrationProcedureConfig, Phase
from agentchemist.control.dispenser import DispenserConfig

K_TRUE, DROP_TRUE = 0.8, 0.05   # mL per mm, mL per drop: not the controller's defaults


class Bench:
    """A bulb with slack (priming), drops of DROP_TRUE, a balance that reads the landed mass at 2 Hz."""

    def __init__(self, proc, slack_mm=0.3, drops=True, balance=True, stall_at=None):
        self.proc, self.opening, self.t = proc, 60.0, 0.0
        self.deepest, self.slack, self.expelled, self.landed = 60.0, slack_mm, 0.0, 0
        self.drops, self.balance, self.stall_at = drops, balance, stall_at
        self.step = None

    def run(self, seconds):
        end = self.t + seconds
        while self.t < end - 1e-9 and not (self.step and self.step.finished):
            self.t = round(self.t + 0.05, 9)
            stalled = self.stall_at is not None and self.t >= self.stall_at
            if self.step is not None and not stalled:
                self.opening = self.step.command_opening_mm
            if self.opening < self.deepest:
                travel = self.deepest - self.opening
                dead = min(self.slack, travel)
                self.slack -= dead
                self.expelled += K_TRUE * (travel - dead)
                self.deepest = self.opening
            while self.drops and self.expelled >= (self.landed + 1) * DROP_TRUE:
                self.landed += 1
                self.proc.on_drop(self.t)
            if self.balance and round(self.t / 0.5, 6) % 1 == 0:
                self.proc.on_mass(self.t, round(100.0 + self.landed * DROP_TRUE, 2))  # 0.01 g readability
            self.step = self.proc.update(self.t, self.opening)
        return self.step


def make(**kw):
    cfg = CalibrationProcedureConfig(**{"samples": 4, "drops_per_sample": 6, **kw})
    return CalibrationProcedure(cfg, DispenserConfig(), start_opening_mm=60.0, now=0.0, liquid="naoh 0.1 M",
                                pipette_id="bulb-1")


def test_fits_k_and_the_drop_volume():
    proc = make()
    step = Bench(proc).run(600.0)
    assert step.finished and step.phase == Phase.DONE, step.error
    cal = step.calibration
    assert cal.k_ml_per_mm == pytest.approx(K_TRUE, rel=0.05)
    assert cal.drop_volume_ml == pytest.approx(DROP_TRUE, rel=0.02)
    assert cal.samples == 4 and cal.pipette_id == "bulb-1" and cal.liquid == "naoh 0.1 M"
    assert [s.drops for s in proc.samples] == [6, 12, 18, 24]
    # The priming drop and the slack are excluded: displacement counts from the tare.
    assert proc.samples[0].displacement_mm == pytest.approx(6 * DROP_TRUE / K_TRUE, abs=DROP_TRUE / K_TRUE)


def test_holds_still_while_weighing():
    proc = make()
    bench = Bench(proc)
    commands = []
    while not (bench.step and bench.step.finished) and bench.t < 600:
        bench.run(0.05)
        commands.append((bench.step.phase, bench.step.command_opening_mm))
    for (pa, a), (pb, b) in zip(commands, commands[1:]):
        if pa in (Phase.TARE, Phase.WEIGH) and pb == pa:
            assert a == b


def test_no_drop_while_priming_fails_with_a_reason():
    step = Bench(make(prime_timeout_s=5.0), drops=False).run(60.0)
    assert step.phase == Phase.FAILED
    assert "no_drop" in step.error or "no drop" in step.error


def test_a_silent_balance_fails():
    step = Bench(make(), balance=False).run(60.0)
    assert step.phase == Phase.FAILED and "balance" in step.error


def test_a_stalled_gripper_fails_and_retracts():
    step = Bench(make(), stall_at=8.0).run(60.0)
    assert step.phase == Phase.FAILED and "gripper_stall" in step.error
    assert step.command_opening_mm == DispenserConfig().safe_opening_mm


@pytest.mark.parametrize("kw, message", [({"samples": 2}, "at least 3"), ({"rate_mm_s": float("nan")}, "rate_mm_s"),
                                         ({"drops_per_sample": 0}, "drops_per_sample"),
                                         ({"density_g_ml": -1.0}, "density")])
def test_bad_configs_are_refused(kw, message):
    with pytest.raises(CalibrationError, match=message):
        make(**kw)


def test_bad_requests_are_refused():
    with pytest.raises(CalibrationError, match="liquid"):
        CalibrationProcedure(CalibrationProcedureConfig(), DispenserConfig(), start_opening_mm=60.0, now=0.0,
                             liquid=" ", pipette_id="p")
    with pytest.raises(CalibrationError, match="exceeds"):
        CalibrationProcedure(CalibrationProcedureConfig(rate_mm_s=9.0), DispenserConfig(), start_opening_mm=60.0,
                             now=0.0, liquid="water", pipette_id="p")
    proc = make()
    with pytest.raises(CalibrationError, match="not a number"):
        proc.on_mass(1.0, float("nan"))
