"""The executor's effects (agentchemist.fsm.effects) as the messages the vision supervisor publishes."""
from agentchemist.fsm.commands import Report
from agentchemist.fsm.effects import PublishHue, PublishState, Tell
from agentchemist_interfaces.msg import AgentMessage, FsmState, QuantityEstimate
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import encode_payload
from agentchemist_ros.common.timeconv import to_msg


def fsm_state(e: PublishState, experiment_id: str, now: float) -> FsmState:
    return FsmState(stamp=to_msg(now), experiment_id=experiment_id, state=e.state, previous_state=e.previous,
                    symbol=e.symbol, subtask_id=e.subtask_id, accepting=e.accepting, terminal=e.terminal)


def agent_message(e: Tell, experiment_id: str, sender: str, now: float) -> AgentMessage:
    return AgentMessage(stamp=to_msg(e.stamp if e.stamp is not None else now), experiment_id=experiment_id,
                        sender=sender, receiver=e.receiver, subtask_id=e.subtask_id, symbol=e.symbol,
                        instruction=e.instruction, target_state=e.target_state,
                        payload_json=encode_payload(e.symbol, e.payload))


def anomaly(e: Report, experiment_id: str, source: str, state: str, now: float):
    """`state`: the machine's state now, for a report that does not carry the one it was decided in."""
    return make_anomaly(now=now, experiment_id=experiment_id, source=source, kind=e.kind, severity=e.severity,
                        description=e.description, fsm_state=e.fsm_state if e.fsm_state is not None else state,
                        response=e.response, resolved=e.resolved)


def hue_estimate(e: PublishHue, experiment_id: str) -> QuantityEstimate:
    return QuantityEstimate(stamp=to_msg(e.stamp), experiment_id=experiment_id, quantity="colour_hue", unit="deg",
                            channel="vision", value=e.hue_deg, delta=e.delta_deg, confidence=e.confidence,
                            fsm_state=e.fsm_state, subtask_id=e.subtask_id, event_id="")
