"""The participant's own view of sensorkitd (docs/participant.md): the authorization sheet a study's
`requestAuthorization` raises, and "Research Sensor & Usage Data" — every study, its sensors and
their state, turning a sensor off, the data collected per sensor per day, deleting recorded data.

A GTK 4 + libadwaita application (PyGObject from Debian: python3-gi, gir1.2-gtk-4.0, gir1.2-adw-1,
python3-gi-cairo). `choices` is the logic without GTK; `sheet` and `panel` are the windows; `app`
ties them to the daemon. Start it with `python3 -m sensorkit.participant` (the panel) or
`python3 -m sensorkit.participant --watch` (stay in the background, raise the sheet when a study
asks).
"""
