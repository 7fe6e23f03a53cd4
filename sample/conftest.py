# The files under projects/ are snapshots of six separate packages and the
# probes only make sense inside a checkout of one of them (see verify.py),
# so a pytest run that wanders into sample/ must not collect them.
collect_ignore = ["projects", "probes", "build.py", "verify.py"]
