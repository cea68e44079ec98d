"""The DescribeScene service of the vision supervisor: what the front camera shows (objects, the scene
checks with their reasons) and a one-line summary from the configured vision backend."""
import json

from agentchemist.perception.scene import describe_scene
from agentchemist.perception.vlm import scene_summary
from agentchemist_interfaces.msg import SceneObject
from agentchemist_ros.common.timeconv import to_msg


def describe_front(frame, backend, now: float, request, response):
    response.header.stamp = to_msg(now)
    response.header.frame_id = "front_camera"
    if request.camera not in ("", "front") or frame is None:
        response.success = False
        response.message = f"camera {request.camera!r} is not used for scene checks" if request.camera not in \
            ("", "front") else "no front camera image received yet"
        return response
    desc = describe_scene(frame)
    response.objects = [SceneObject(id=o.id, kind=o.kind, u=o.u, v=o.v, confidence=o.confidence)
                        for o in desc.objects]
    response.checks_json = json.dumps({"checks": desc.checks, "reasons": desc.reasons,
                                       "image_size": list(desc.image_size or ())})
    response.success, response.message = True, scene_summary(frame, len(desc.objects), backend)
    return response

