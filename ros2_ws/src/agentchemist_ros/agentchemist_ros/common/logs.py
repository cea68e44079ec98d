"""Log at a severity chosen at run time: rclpy ties a severity to its call site, so one call per severity."""


def log(logger, level: str, text: str) -> None:
    if level == "error":
        logger.error(text)
    elif level == "warn":
        logger.warn(text)
    else:
        logger.info(text)
