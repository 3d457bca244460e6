"""fgtest - what the Python tests share (tests/lib/fgtest).

daemon: start fanogate with --ready-fd and wait for its readiness line
(no log grep, no sleep); listeners on port 0 report the ports they got.
Tests put tests/lib on sys.path (fgtest.path_setup or PYTHONPATH from
meson) and import from here."""
