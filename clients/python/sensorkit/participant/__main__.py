"""python3 -m sensorkit.participant [--watch] [--size WxH]"""
import sys

from .app import main

sys.exit(main(sys.argv))
