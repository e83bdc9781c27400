# SPDX-License-Identifier: MIT
# store/export*.c: exporting the delta between two versions.
