"""Asking another node without blocking the executor (common/answers.py), on real rclpy nodes: the answer
when the graph shows the peer, the request sent anyway when the graph lags behind the transport, None from
a silent peer, a late answer handed to `late`; and the whole graph with a dead action policy."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.task import Future  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from agentchemist_ros.common.answers import DROPPED, answered  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import MotionProbe, run_experiment, spinning, wait_for  # noqa: E402

SERVICE = "/answers_test/trigger"


@pytest.fixture
def nodes():
    ensure_init()
    asker, peer = Node("asker"), Node("peer")
    calls = []

    def serve(request, response):
        calls.append(request)
        response.success, response.message = True, "tared"
        return response

    peer.create_service(Trigger, SERVICE, serve)
    yield asker, peer, calls
    rclpy.try_shutdown()


def ask(asker, client, wait_s, ready=None, late=None):
    return answered(asker, ready=ready or client.service_is_ready, wait_s=wait_s, late=late,
                    send=lambda: client.call_async(Trigger.Request()))


def test_the_answer_of_a_peer_the_graph_shows(nodes):
    asker, peer, calls = nodes
    client = asker.create_client(Trigger, SERVICE)
    with spinning([asker, peer]):
        assert wait_for(client.service_is_ready, 10.0)
        future = ask(asker, client, wait_s=5.0)
        assert wait_for(future.done, 5.0)
    assert future.result().success and future.result().message == "tared"
    assert len(calls) == 1


def test_the_request_goes_out_at_the_deadline_when_the_graph_lags(nodes):
    """The CI failure this module answers: the graph cache said "no server" about a server that was there."""
    asker, peer, calls = nodes
    client = asker.create_client(Trigger, SERVICE)
    with spinning([asker, peer]):
        assert wait_for(client.service_is_ready, 10.0)  # the transport is matched ...
        t0 = time.monotonic()
        future = ask(asker, client, wait_s=0.5, ready=lambda: False)  # ... but the graph says no
        assert wait_for(future.done, 5.0)
        waited = time.monotonic() - t0
    assert future.result() is not None and future.result().success
    assert len(calls) == 1 and waited >= 0.5


def test_a_silent_peer_gives_none_after_both_waits(nodes):
    asker, _, _ = nodes
    client = asker.create_client(Trigger, "/answers_test/nobody_serves_this")
    with spinning([asker]):
        t0 = time.monotonic()
        future = ask(asker, client, wait_s=0.4)
        assert wait_for(future.done, 5.0)
        waited = time.monotonic() - t0
    assert future.result() is None
    assert waited >= 0.8  # wait_s for the graph, then wait_s for the answer to the request sent anyway


def test_an_answer_after_the_deadline_goes_to_late(nodes):
    asker, _, _ = nodes
    pending, late = Future(), []
    with spinning([asker]):
        future = answered(asker, ready=lambda: True, send=lambda: pending, wait_s=0.3, late=late.append)
        assert wait_for(future.done, 5.0) and future.result() is None
        pending.set_result("accepted too late")
    assert late == ["accepted too late"]


def test_a_request_no_longer_wanted_is_never_sent(nodes):
    """The experiment ended while the graph did not show the peer: nothing goes out (the robot must not
    move for an experiment that is over)."""
    asker, peer, calls = nodes
    client = asker.create_client(Trigger, SERVICE)
    wanted = [True]
    with spinning([asker, peer]):
        assert wait_for(client.service_is_ready, 10.0)
        future = ask_when(asker, client, wanted)
        wanted[0] = False  # the experiment ends before the (lagging) graph shows the peer
        assert wait_for(future.done, 5.0)
        # A last request on the same client: the peer serves requests in order, so once the marker is
        # answered, a request sent before it would have been served too.
        marker = client.call_async(Trigger.Request())
        assert wait_for(marker.done, 10.0)
    assert future.result() is DROPPED and len(calls) == 1, "only the marker may reach the peer"


def test_a_request_that_cannot_be_sent_is_no_answer(nodes):
    asker, _, _ = nodes

    def broken():
        raise RuntimeError("client destroyed")

    with spinning([asker]):
        future = answered(asker, ready=lambda: True, send=broken, wait_s=5.0)
        assert wait_for(future.done, 5.0)
    assert future.result() is None


def ask_when(asker, client, wanted):
    return answered(asker, ready=lambda: False, wait_s=5.0, wanted=lambda: wanted[0],
                    send=lambda: client.call_async(Trigger.Request()))


def test_a_dead_action_policy_aborts_the_run_with_a_clear_error(tmp_path):
    """Weighing begins with the action policy placing the beaker: with no policy the run aborts with
    agent_unavailable (on the anomaly topic and in the result) and nothing moves."""
    run = run_experiment(REPO / "config" / "scenarios" / "nacl_weighing.yaml", tmp_path, probe=MotionProbe,
                         wall_limit_s=120.0, without=("action_policy",),
                         overrides={"vision_supervisor": {"agent_wait_s": 1.0}, "lab_sim": {"camera_rate_hz": 1.0}})
    assert not run.result.success and run.result.outcome == "aborted"
    assert "the action policy is not running" in run.result.message
    kinds = [(a.source, a.kind, a.severity) for a in run.probe.anomalies]
    assert ("vision_supervisor", "agent_unavailable", "halt") in kinds, kinds
    assert run.probe.commands == [], "nothing may move without the agent that plans the moves"
