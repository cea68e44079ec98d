"""ph_meter: a benchtop pH meter on a serial port -> /lab/ph_meter/reading (docs/robot.md).

Publishes ChemicalReading for pH and temperature (sensor 'ph_meter', as the twin does) with the self-check
the reading carries: false, with the reason in the log and the anomaly topic, for a value the meter
flags or that is out of range, an unexpected unit, or a probe without a valid, fresh calibration (when
require_calibration). The meter's stability (judged from the drift: neither dialect sends a flag) goes
on /lab/ph_meter/stable (std_msgs/Bool, published with each pH). A reading older than deadline_s raises
sensor_timeout; a pulled cable is reopened every reconnect_period_s. ~/reload_calibration
(std_srvs/Trigger) rereads the calibration store after `agentchemist ph-calibrate`; the calibration's state
goes on /lab/ph_meter/calibration (std_msgs/String JSON, latched), where the supervisor reads it.

    ros2 run agentchemist_ros ph_meter --ros-args -p port:=/dev/serial/by-id/usb-...-if00 \\
        -p dialect:=tps_continuous -p probe_id:=ph_probe_1

The protocol, calibration and bookkeeping are agentchemist.hardware.instruments; this node owns the port's
timer, the messages and the clock. Serial timing (polls, deadline, reconnect) runs on the monotonic wall
clock, because the line runs in real time; readings are stamped with the node's clock.
"""
import math
import time

from std_msgs.msg import Bool, Header, String
from std_srvs.srv import Trigger

from agentchemist.contracts import AnomalyKind, Severity
from agentchemist.hardware.instruments.meters import PhMeterConfig, PhMeterLogic
from agentchemist.hardware.instruments.ph_dialects import PH_DIALECTS
from agentchemist_interfaces.msg import Anomaly, ChemicalReading
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import report_instrument
from agentchemist_ros.common.codec import encode_calibration
from agentchemist_ros.common.diagnostics import LinkDiagnostics
from agentchemist_ros.common.guarded import GuardedNode
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import LATCHED, READINGS, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

UNITS = {"pH": "pH", "temperature": "degC"}
NOISE = {"pH": 0.01, "temperature": 0.1}     # the meters' last digit: the reading's standard deviation


class PhMeterNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("ph_meter", **kwargs)
        self.config = config = declare_config(self, PhMeterConfig)
        service_hz = declare(self, "service_rate_hz", 50.0, "How often the port is read (Hz)", low=1.0, high=1000.0)
        self.line = config.open_line(PH_DIALECTS[config.dialect](), self.get_name())
        self.link = self.line.link
        self.close_with_node(self.line.close)
        self.logic = PhMeterLogic(config)
        self.reading_pub = self.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        self.stable_pub = self.create_publisher(Bool, topics.PH_STABLE, READINGS)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.diagnostics = LinkDiagnostics(self, self.link, config.port)  # /diagnostics, 1 Hz
        self.create_service(Trigger, "~/reload_calibration", self.on_reload)
        # The electrode calibration's state, latched, for the supervisor (calibration_required: fsm/calibration.py);
        # stated again every 10 s, so that one going stale during a session is said within 10 s.
        self.calibration_pub = self.create_publisher(String, topics.PH_CALIBRATION, LATCHED)
        self.create_timer(10.0, self.publish_calibration)
        self.publish_calibration()
        self._last_problem: dict[str, str] = {}
        self.link.start(time.monotonic())
        self.timer = self.create_timer(1.0 / service_hz, self.tick)
        cal = self.logic.calibration
        self.get_logger().info(
            f"{config.dialect} meter on {config.port} at {config.baud} baud; probe {config.probe_id}: "
            + (f"slope {cal.slope_pct:.1f} %, offset {cal.offset_mv:+.1f} mV" if cal else self.logic.calibration_problem))

    def tick(self):
        for parsed in self.line.service(time.monotonic()):
            if not parsed.readings:
                continue
            now = node_now(self)
            for reading in self.logic.process(parsed, now=now, wall_now=time.time()):
                self.publish(reading, now)
        self.report()

    def publish(self, reading, now):
        if not math.isfinite(reading.value):   # a meter in mV mode without a calibration: no pH to publish
            self.flag(reading)
            return
        self.reading_pub.publish(ChemicalReading(
            header=Header(stamp=to_msg(now), frame_id="ph_meter"), sensor="ph_meter", quantity=reading.quantity,
            value=float(reading.value), unit=UNITS.get(reading.quantity, reading.unit),
            self_check_ok=bool(reading.self_check_ok), noise=NOISE.get(reading.quantity, 0.0)))
        if reading.quantity == "pH":
            self.stable_pub.publish(Bool(data=bool(reading.stable)))
        self.flag(reading)

    def flag(self, reading):
        last = self._last_problem.get(reading.quantity, "")
        if reading.problem != last:   # a new problem (or its end) once per quantity, not per reading
            if reading.problem:
                self.anomaly(AnomalyKind.READING_FLAGGED, Severity.WARN, f"{reading.quantity}: {reading.problem}")
            else:
                self.anomaly(AnomalyKind.READING_FLAGGED, Severity.INFO,
                             f"{reading.quantity} readings pass their self-check again", resolved=True)
            self._last_problem[reading.quantity] = reading.problem

    def report(self):
        for event in self.link.drain_events():
            self.anomaly(event.kind, event.severity, event.description, event.resolved)

    def anomaly(self, kind, severity, description, resolved=False):
        report_instrument(self, self.anomaly_pub, kind, severity, description, resolved)

    def publish_calibration(self):
        self.calibration_pub.publish(String(data=encode_calibration(self.logic.status(time.time()))))

    def on_reload(self, request, response):
        self.logic.reload()
        self.publish_calibration()
        cal = self.logic.calibration
        problem = self.logic.calibration_problem or (cal.usable(time.time(), self.config.acceptance) if cal else "")
        response.success = not problem
        response.message = problem or f"probe {cal.probe}: slope {cal.slope_pct:.1f} %, offset {cal.offset_mv:+.1f} mV"
        return response


def main(args=None):
    spin_node(PhMeterNode, args)


if __name__ == "__main__":
    main()
