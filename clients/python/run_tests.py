"""Runs the named unittest modules the way `make test` wants them run: every test must run, so a
skipped test counts as a failure (a skip on a machine missing a dependency would pass a run that
checked nothing), and the run ends with one plain line, `python: N passed, N failed, N skipped`,
that a person and CI read alike.

    /usr/bin/python3 run_tests.py test_protocol_codec test_package
"""
import sys
import unittest


def main(modules):
    if not modules:
        print("usage: run_tests.py MODULE [MODULE ...]", file=sys.stderr)
        return 2
    suite = unittest.defaultTestLoader.loadTestsFromNames(modules)
    result = unittest.TextTestRunner(verbosity=1, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    for test, reason in result.skipped:
        print(f"skipped, which counts as a failure here: {test.id()}: {reason}")
    print(f"python: {passed} passed, {failed + skipped} failed, {skipped} skipped")
    return 0 if result.testsRun > 0 and failed == 0 and skipped == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
