from inference_platform.inferctl.cli import console

console()
