"""The pipette calibration a node uses: the calibration file when there is one, else its parameters."""
from agentchemist.control.calibration import load_or_none

from .params import declare


def declare_calibration(node):
    """Declare `calibration_file` and return (k_ml_per_mm, drop_volume_ml, residual_ml, drop_sd_ml, source)."""
    path = declare(node, "calibration_file", "",
                   "Pipette calibration YAML ('' = config/calibration/pipette.yaml when present)")
    k = declare(node, "k_ml_per_mm", 1.0, "Fallback when there is no calibration file: mL per mm of closing",
                low=1e-6, high=100.0)
    drop = declare(node, "drop_volume_ml", 0.046875, "Fallback when there is no calibration file: drop volume (mL)",
                   low=1e-4, high=1.0)
    cal = load_or_none(path)
    if cal is None:
        node.get_logger().warn("no pipette calibration file: using the k_ml_per_mm / drop_volume_ml parameters "
                               "(run `agentchemist calibrate`)")
        return k, drop, 0.002, 0.0015, "parameters"
    node.get_logger().info(f"pipette calibration: k {cal.k_ml_per_mm:.4f} mL/mm, drop {cal.drop_volume_ml:.5f} mL "
                           f"({cal.liquid}, {cal.rate_mm_s} mm/s, {cal.created})")
    return cal.k_ml_per_mm, cal.drop_volume_ml, cal.residual_ml, cal.drop_volume_sd_ml, "file"
