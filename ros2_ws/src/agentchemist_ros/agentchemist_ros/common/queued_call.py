"""A callback run once, soon, behind what the node's executor has already queued.

Posting it on the executor (create_task) puts it at the back of the queue: in one process every message
published before the post is already there (DDS delivers within the publish call), so they are handled
first. A one-shot timer did the same about 180 us later (the timers' thread wakes up late), which the twin
paid some 24 000 times a titration. Posting again before it has run does nothing. A node not yet added to
an executor gets the one-shot timer.
"""


class QueuedCall:
    def __init__(self, node, callback, what: str):
        self._node = node
        self._callback = node.guard(callback, what) if hasattr(node, "guard") else callback
        self._posted = False
        self._timer = node.create_timer(1e-4, self._run)
        self._timer.cancel()

    def post(self) -> None:
        if self._posted:
            return
        self._posted = True
        executor = self._node.executor
        if executor is not None:
            executor.create_task(self._run)
        else:
            self._timer.reset()

    def _run(self) -> None:
        self._timer.cancel()
        self._posted = False
        self._callback()
