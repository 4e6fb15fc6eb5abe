from inferctl.cli import console

console()
