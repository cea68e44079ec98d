"""Building Anomaly messages the same way in every node. `kind` and `severity` are members of
agentchemist.contracts' AnomalyKind and Severity (equal to their strings, so a str is accepted as it
is on the wire; tests/unit/test_contracts_anomalies.py keeps the kinds the nodes report in the enum)."""
from agentchemist.contracts import AnomalyKind, Severity
from agentchemist_interfaces.msg import Anomaly

from .timeconv import node_now, to_msg


def make_anomaly(*, now: float, experiment_id: str, source: str, kind: AnomalyKind | str, severity: Severity | str,
                 description: str, fsm_state: str = "", subtask_id: str = "", response: str = "",
                 resolved: bool = False) -> Anomaly:
    return Anomaly(stamp=to_msg(now), experiment_id=experiment_id, source=source, kind=kind,
                   severity=severity, description=description, fsm_state=fsm_state,
                   subtask_id=subtask_id, response=response, resolved=resolved)


def report_instrument(node, pub, kind: AnomalyKind | str, severity: Severity | str, description: str,
                      resolved: bool = False) -> None:
    """An instrument driver's anomaly (no experiment: the instrument serves every one), logged at its
    severity and published."""
    # rclpy fixes a logging call site's severity on its first call: one call site per severity.
    if severity == Severity.INFO:
        node.get_logger().info(description)
    else:
        node.get_logger().warn(description)
    pub.publish(make_anomaly(now=node_now(node), experiment_id="", source=node.get_name(), kind=kind,
                             severity=severity, description=description, resolved=resolved))
