# SPDX-License-Identifier: MIT
# store/autosquash.c: the automatic squash policy.
