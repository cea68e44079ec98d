"""The twin's bench as visualization_msgs: one Marker per workcell_view.MarkerSpec (lab_sim publishes them)."""
from std_msgs.msg import Header
from visualization_msgs.msg import Marker

_SHAPES = {"cube": Marker.CUBE, "cylinder": Marker.CYLINDER, "sphere": Marker.SPHERE,
           "text": Marker.TEXT_VIEW_FACING}


def marker_msg(spec, stamp) -> Marker:
    """visualization_msgs/Marker of a workcell_view.MarkerSpec (lifetime 0: it stays until replaced)."""
    msg = Marker(header=Header(stamp=stamp, frame_id=spec.frame), ns=spec.ns, id=spec.id)
    if spec.action == "delete":
        msg.action = Marker.DELETE
        return msg
    msg.action, msg.type, msg.text = Marker.ADD, _SHAPES[spec.shape], spec.text
    p, q = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(v) for v in spec.position)
    q.x, q.y, q.z, q.w = (float(v) for v in spec.orientation)
    msg.scale.x, msg.scale.y, msg.scale.z = (float(v) for v in spec.scale)
    msg.color.r, msg.color.g, msg.color.b, msg.color.a = (float(v) for v in spec.rgba)
    return msg
