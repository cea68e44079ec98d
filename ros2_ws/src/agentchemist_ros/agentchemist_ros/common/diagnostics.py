"""/diagnostics for the serial instrument drivers: one DiagnosticStatus per instrument, once a second.

Level OK while readings arrive within the deadline, WARN when the link counts damaged frames since the last
status, ERROR while the port is closed or no reading is fresh; the values carry the link's counters
(frames, readings, malformed, unanswered requests, reconnects) and the age of the newest reading.
"""
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from std_msgs.msg import Header

from .timeconv import node_now, to_msg


class LinkDiagnostics:
    def __init__(self, node, link, port: str, period_s: float = 1.0):
        self.node, self.link, self.port = node, link, port
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._malformed = 0
        node.create_timer(period_s, self.publish)

    def publish(self):
        link, stats = self.link, self.link.stats
        now = time.monotonic()
        age = None if link.last_reading is None else now - link.last_reading
        new_malformed, self._malformed = stats.malformed - self._malformed, stats.malformed
        if not link.connected or age is None or age > link.deadline_s:
            level, message = DiagnosticStatus.ERROR, "port closed" if not link.connected else "no fresh reading"
        elif new_malformed:
            level, message = DiagnosticStatus.WARN, f"{new_malformed} damaged frame(s) in the last period"
        else:
            level, message = DiagnosticStatus.OK, "reading"
        values = {"port": self.port, "dialect": link.dialect.name, "frames": stats.frames, "readings": stats.readings,
                  "malformed": stats.malformed, "unanswered_requests": stats.no_answer, "reconnects": stats.reconnects,
                  "reading_age_s": "none" if age is None else f"{age:.2f}"}
        status = DiagnosticStatus(level=level, name=f"{self.node.get_name()}: serial instrument", message=message,
                                  hardware_id=self.port, values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        self.pub.publish(DiagnosticArray(header=Header(stamp=to_msg(node_now(self.node))), status=[status]))
