"""What every face promises, declared once and light to import: the list of public verbs (verbs.py), the
service's request and reply bodies (wire.py), and the names and defaults the command line and the Client
need before anything heavy loads (defaults.py). Nothing here imports the layers above."""
