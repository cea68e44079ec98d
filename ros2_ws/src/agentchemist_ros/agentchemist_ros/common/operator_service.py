"""The supervisor's pause service: `/agentchemist/pause` (std_srvs/SetBool; true pauses, false resumes).

The decision is the core's (agentchemist.fsm.operator); this maps the request onto the running executor
under the node's lock and carries out its effects. Cancel and emergency stop are the operator's halt on
the anomaly topic (kind operator_stop, source operator), which the supervisor already obeys.
"""
from std_srvs.srv import SetBool

from agentchemist.fsm.operator import set_paused
from agentchemist_ros.common import topics
from agentchemist_ros.common.timeconv import node_now


def serve_pause(node) -> None:
    """`node` is the vision supervisor: it has `lock`, `ex` (the executor or None) and `carry_out`."""
    def handle(request, response):
        with node.lock:
            if node.ex is None:
                response.success, response.message = False, "no experiment is running"
                return response
            accepted, message, effects = set_paused(node.ex, bool(request.data), node_now(node), "the operator")
        node.carry_out(effects)
        response.success, response.message = accepted, message
        node.get_logger().info(f"pause service ({'pause' if request.data else 'resume'}): {message}")
        return response
    node.create_service(SetBool, topics.PAUSE, handle, callback_group=node.group)
