# SPDX-License-Identifier: MIT
# store/blame.c and store/linediff.c: line ownership records.
