"""The DescribeScene service of the vision supervisor: what the front camera shows (objects, the scene
checks with their reasons, what the lab inventory says each seen container holds) and a one-line summary
from the configured vision backend."""
import json

from agentchemist.bench.inventory import InventoryError, load_inventory

from agentchemist.perception.scene import describe_scene
from agentchemist.perception.vlm import make_backend, scene_summary
from agentchemist_interfaces.msg import SceneObject
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.timeconv import to_msg


def describe_front(frame, backend, now: float, request, response, inventory_file: str = ""):
    response.header.stamp = to_msg(now)
    response.header.frame_id = "front_camera"
    if request.camera not in ("", "front") or frame is None:
        response.success = False
        response.message = f"camera {request.camera!r} is not used for scene checks" if request.camera not in \
            ("", "front") else "no front camera image received yet"
        return response
    try:  # read at every call: the lab updates the file when a bottle is refilled or replaced
        inventory, inventory_error = load_inventory(inventory_file or None), ""
    except InventoryError as exc:
        inventory, inventory_error = None, str(exc)
    desc = describe_scene(frame, inventory=inventory)
    response.objects = [SceneObject(id=o.id, kind=o.kind, u=o.u, v=o.v, confidence=o.confidence)
                        for o in desc.objects]
    response.checks_json = json.dumps({"checks": desc.checks, "reasons": desc.reasons,
                                       "image_size": list(desc.image_size or ()), "contents": desc.contents,
                                       "inventory_error": inventory_error})
    response.success, response.message = True, scene_summary(frame, len(desc.objects), backend)
    return response


def declared_inventory(node) -> str:
    """The lab inventory file the scene reports contents from ('' = config/inventory.yaml)."""
    return declare(node, "inventory_file", "", "Lab inventory YAML: what each tagged container holds "
                   "('' = config/inventory.yaml; the scenario runner writes the twin's)")


def declared_backend(node):
    """The node's scene description backend from its parameters (opencv, or an OpenAI-compatible VLM)."""
    backend = declare(node, "vision_backend", "opencv",
                      "Scene description backend: opencv (default) | openai (an OpenAI-compatible VLM endpoint)")
    vlm = {"base_url": declare(node, "vlm_base_url", "", "OpenAI-compatible endpoint, e.g. http://host:8000/v1"),
           "model": declare(node, "vlm_model", "", "Model name served at vlm_base_url"),
           "timeout_s": declare(node, "vlm_timeout_s", 20.0, "Timeout of one VLM request (s)", low=0.1, high=600.0)}
    return make_backend("opencv") if backend == "opencv" else make_backend(backend, **vlm)
