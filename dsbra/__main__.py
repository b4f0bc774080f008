from dsbra.cli import main

main()
