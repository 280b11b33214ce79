# SPDX-License-Identifier: MIT
"""The last lines of a ctest run: which tests were skipped, and why.

Run by ctest itself (CTEST_CUSTOM_PRE_TEST and CTEST_CUSTOM_POST_TEST in the
CTestCustom.cmake that tests/CMakeLists.txt writes into the build directory):

  ctest_skipped.py pre DIR    empties DIR (the notes of the previous run)
  ctest_skipped.py post DIR   prints the notes this run's tests left in DIR

A test that skips (exit 77, SKIP_RETURN_CODE) writes why into
$WEFT_SKIP_DIR/<pid>.txt (DIR; tests/common/conformance.h, tests/cli/wefttest.py
and the Python tests that find the corpus themselves), one line
"PROGRAM [ARGS]: REASON"; so the reason comes from the test that knows it.
"""
import os
import sys


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("pre", "post"):
        print("usage: ctest_skipped.py pre|post DIR", file=sys.stderr)
        return 2
    d = sys.argv[2]
    if sys.argv[1] == "pre":
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.endswith(".txt"):
                os.remove(os.path.join(d, name))
        return 0
    notes = []
    if os.path.isdir(d):
        for name in os.listdir(d):
            if name.endswith(".txt"):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    notes += [x.rstrip("\n") for x in f if x.strip()]
    if notes:
        n = len(notes)
        print(f"{n} test{'s' if n != 1 else ''} skipped, each in its own words:")
        for x in sorted(notes):
            print(f"  {x}")
        if any("conformance corpus" in x for x in notes):
            print("(the corpus is read from $WEFT_CONFORMANCE_DIR, else ../shared/conformance "
                  "beside the source tree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
