"""Coroutine service callbacks on any executor (see common/waiting.py for why callbacks await Futures)."""
import inspect


def respond_when_done(node, service):
    """Serve a coroutine service callback on any executor. The Python executors await it; rclpy's
    EventsExecutor (Jazzy) hands the coroutine object to send_response instead (ros2/rclpy#1473), so
    it is run as an executor task here and the response sent when it completes."""
    send = service.send_response

    def send_response(response, header):
        if not inspect.iscoroutine(response):
            send(response, header)
            return

        async def finish():
            send(await response, header)
        node.executor.create_task(finish)
    service.send_response = send_response
