"""balance: a laboratory balance on a serial port -> /lab/balance/reading, with tare and zero services.

Publishes ChemicalReading (sensor 'balance', quantity mass, g) for every weight the balance sends, its
own stability flag on /lab/balance/stable (std_msgs/Bool, with each mass) and self_check_ok false for an
overload, a unit other than g or a negative net mass beyond negative_tolerance_g. /lab/balance/tare and
/lab/balance/zero (std_srvs/Trigger, the names the twin serves) send T / Z (MT-SICS) or ESC T (SBI) and
answer with the balance's reply (MT-SICS ``T I``: not executable, e.g. unstable); an SBI balance sends
no acknowledgement, so the answer there is 'sent'. Deadline and reconnect as in ph_meter.

    ros2 run agentchemist_ros balance --ros-args -p port:=/dev/serial/by-id/usb-...-if00 -p dialect:=mt_sics
"""
import threading
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from std_msgs.msg import Bool, Header
from std_srvs.srv import Trigger

from agentchemist.hardware.instruments.meters import BalanceConfig, BalanceLogic
from agentchemist_interfaces.msg import Anomaly, ChemicalReading
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import report_instrument
from agentchemist_ros.common.diagnostics import LinkDiagnostics
from agentchemist_ros.common.guarded import GuardedNode
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import READINGS, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

READABILITY_G = 0.01


class BalanceNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("balance", **kwargs)
        self.config = config = declare_config(self, BalanceConfig)
        service_hz = declare(self, "service_rate_hz", 50.0, "How often the port is read (Hz)", low=1.0, high=1000.0)
        self.command_timeout_s = declare(self, "command_timeout_s", 5.0, "Longest wait for a tare/zero answer (s)",
                                         low=0.1, high=60.0)
        self.logic = BalanceLogic(config)
        self.line = config.open_line(self.logic.dialect, self.get_name())
        self.link = self.line.link
        self.close_with_node(self.line.close)
        # The port is touched by the timer and by service calls on other threads: one lock.
        self.lock = threading.RLock()
        self.reading_pub = self.create_publisher(ChemicalReading, topics.BALANCE_READING, READINGS)
        self.stable_pub = self.create_publisher(Bool, topics.BALANCE_STABLE, READINGS)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.diagnostics = LinkDiagnostics(self, self.link, config.port)  # /diagnostics, 1 Hz
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, topics.BALANCE_TARE, self.on_tare, callback_group=services)
        self.create_service(Trigger, topics.BALANCE_ZERO, self.on_zero, callback_group=services)
        self._last_problem = ""
        self.link.start(time.monotonic())
        self.timer = self.create_timer(1.0 / service_hz, self.tick, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"{config.dialect} balance on {config.port} at {config.baud} baud")

    def tick(self):
        with self.lock:
            self.service()

    def service(self):
        """Read the port, publish what came; the result of a tare/zero it answered, if any (lock held)."""
        result = None
        for parsed in self.line.service(time.monotonic()):
            masses, answered = self.logic.process(parsed)
            result = answered or result
            for mass in masses:
                self.publish(mass)
        for event in self.link.drain_events():
            self.anomaly(event.kind, event.severity, event.description, event.resolved)
        return result

    def publish(self, mass):
        now = node_now(self)
        self.reading_pub.publish(ChemicalReading(
            header=Header(stamp=to_msg(now), frame_id="balance"), sensor="balance", quantity="mass",
            value=float(mass.value), unit="g", self_check_ok=bool(mass.self_check_ok),
            noise=READABILITY_G if mass.stable else 10 * READABILITY_G))
        self.stable_pub.publish(Bool(data=bool(mass.stable)))
        if mass.problem != self._last_problem:
            if mass.problem:
                self.anomaly("reading_flagged", "warn", f"mass: {mass.problem}")
            else:
                self.anomaly("reading_flagged", "info", "mass readings pass their self-check again", resolved=True)
            self._last_problem = mass.problem

    def on_tare(self, request, response):
        return self.command("tare", response)

    def on_zero(self, request, response):
        return self.command("zero", response)

    def command(self, which, response):
        """Send tare/zero and read the port here until the balance answers (MT-SICS answers T after the
        weight is stable: up to command_timeout_s). Readings that arrive meanwhile are published; the timer
        waits on the lock. Synchronous on purpose: it works on every executor, the one-process graph's
        single-threaded one included (a robot node spins its own multi-threaded executor)."""
        deadline = time.monotonic() + self.command_timeout_s
        with self.lock:
            if not self.line.write(self.logic.command(which), time.monotonic()):
                self.logic.pending = None
                response.success, response.message = False, f"{which} not sent: the serial port is closed"
                return response
            if not self.logic.dialect.request:    # continuous dialect: no acknowledgement exists
                self.logic.pending = None
                response.success, response.message = True, f"{which} sent (the balance does not acknowledge)"
                return response
            while time.monotonic() < deadline:
                result = self.service()
                if result is not None:
                    response.success, response.message = result
                    return response
                time.sleep(0.01)
            self.logic.pending = None
        response.success, response.message = False, f"no answer to {which} in {self.command_timeout_s:g} s"
        return response

    def anomaly(self, kind, severity, description, resolved=False):
        report_instrument(self, self.anomaly_pub, kind, severity, description, resolved)


def main(args=None):
    spin_node(BalanceNode, args)


if __name__ == "__main__":
    main()
