"""Ask another node (an action goal, a service call) without blocking the executor, and tell a silent
peer from a slow one.

rclpy's wait_for_server()/wait_for_service() sleep on the calling thread. In the one-process graph the
executor has one thread, so that sleep froze every node, the twin included; and the answer it waits for is
the ROS graph cache's, which on a loaded machine once said "no server" for 15 s about a server that had
served a goal a minute before (CI, test_weighing_graph). Here the request goes out as soon as the graph
shows the peer, or at the deadline anyway (the transport may be matched although the graph cache lags);
the peer counts as absent only when the request itself got no answer.

While a request waits for its answer the node says so on /agentchemist/peer_waits (common/peer_waits.py):
the twin's clock stands still meanwhile, so the wall seconds spent waiting for the graph cache or the
answer cost no simulated time (a state's sim-time timeout cannot run out on them).
"""
import threading
from typing import Callable

from rclpy.clock import Clock, ClockType
from rclpy.task import Future

from agentchemist_ros.common.peer_waits import peer_waits

POLL_S = 0.25
DROPPED = object()  #: the answer when the request was no longer wanted and never went out


def answered(node, *, ready: Callable[[], bool], send: Callable[[], Future], wait_s: float,
             late: Callable[[object], None] | None = None, what: str = "",
             wanted: Callable[[], bool] = lambda: True) -> Future:
    """A Future of the peer's answer (the goal handle, the service response), or of None when the peer
    gave none: the graph did not show it within `wait_s` wall seconds and the request then sent anyway got
    no answer within `wait_s` more, or the graph showed it and the request got no answer within `wait_s`.

    `late` receives an answer that comes after the Future was settled with None (cancel a late accepted
    goal there: the caller has already given up on it). `what` names the peer in the log. A request that
    is no longer `wanted` when it would go out (the experiment has ended meanwhile) is never sent: the
    Future gets DROPPED. A `send` that raises counts as no answer (logged).

    The Future's callbacks run as tasks of the node's executor, as those of the request's own Future do:
    an exception in one is the executor's to report, not lost."""
    outcome = Future(executor=node.executor)
    steady = Clock(clock_type=ClockType.STEADY_TIME)
    start = steady.now().nanoseconds
    sent_at: list[int] = []
    settled: list[bool] = []
    lock = threading.Lock()  # the answer and the poll may run on two executor threads
    waits = peer_waits(node)
    token = waits.begin(what or "a peer")

    def settle(answer):
        with lock:
            first = not settled
            settled.append(True)
        if first:
            waits.end(token)
            timer.cancel()
            node.destroy_timer(timer)
            outcome.set_result(answer)
        elif answer is not None and late is not None:
            late(answer)

    def send_once():
        with lock:
            if sent_at:
                return
            sent_at.append(steady.now().nanoseconds)
        try:
            request = send()
        except Exception as exc:  # noqa: BLE001 (a client destroyed at shutdown, a bad request ...)
            node.get_logger().error(f"the request to {what or 'the peer'} could not be sent: {exc!r}")
            settle(None)
            return
        request.add_done_callback(lambda f: settle(f.result()))

    def tick():
        if settled:
            return
        now = steady.now().nanoseconds
        if not sent_at:
            if not wanted():
                settle(DROPPED)
            elif ready():
                send_once()
            elif now - start >= wait_s * 1e9:
                node.get_logger().warn(f"{what or 'the peer'} is not in the ROS graph after {wait_s:.1f} s: "
                                       "sending the request anyway")
                send_once()
        elif now - sent_at[0] >= wait_s * 1e9:
            settle(None)

    timer = node.create_timer(POLL_S, tick, clock=steady)
    if not wanted():
        settle(DROPPED)
    elif ready():
        send_once()  # the usual case: no poll before the request
    return outcome


def ask(node, client, send: Callable[[], Future], *, what: str, subtask_id: str, wait_s: float,
        running: Callable[[], bool], on_handle: Callable[[object], None], on_silent: Callable[[str], None],
        wanted: Callable[[], bool] = lambda: True, settled: Callable[[], None] = lambda: None) -> None:
    """Send an action goal for one experiment without blocking the executor (see `answered`).
    `on_handle(handle)` gets the goal handle, after `settled()` (whatever the outcome); a peer that gives
    no answer gets `on_silent(reason)`. A goal is not sent once its experiment has ended (`running()`
    false) or it is no longer `wanted`, and one accepted after its experiment ended is cancelled at once."""
    def answered_with(future):
        handle = future.result()
        settled()
        if handle is DROPPED:
            return
        if handle is None:
            on_silent(f"{what} is not running: subtask {subtask_id} got no answer (agent_wait_s {wait_s:g} s)")
        elif not running():
            if handle.accepted:
                handle.cancel_goal_async()
        else:
            on_handle(handle)

    answered(node, ready=client.server_is_ready, send=send, wait_s=wait_s, what=what,
             wanted=lambda: running() and wanted(),
             late=lambda handle: handle.accepted and handle.cancel_goal_async()).add_done_callback(answered_with)


def call(node, client, request, *, what: str, wait_s: float, running: Callable[[], bool],
         on_response: Callable[[object], None], on_silent: Callable[[str], None]) -> None:
    """Call a service for one experiment without blocking the executor (see `answered`); nothing happens
    once the experiment has ended. `on_silent` gets why when the service gave no answer."""
    def answered_with(future):
        response = future.result()
        if response is DROPPED or not running():
            return
        if response is None:
            on_silent(f"{what} offers no {client.srv_name} service (no answer; agent_wait_s {wait_s:g} s)")
        else:
            on_response(response)

    answered(node, ready=client.service_is_ready, wait_s=wait_s, what=what, wanted=running,
             send=lambda: client.call_async(request)).add_done_callback(answered_with)
