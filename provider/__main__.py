"""The plugin's entry point: the Python language host runs ``python provider/ <engine address>``."""

from inference_platform.components.multilang.host import main

if __name__ == "__main__":
    main()
