# SPDX-License-Identifier: MIT
# store/publish*.c: the publish transaction (OCC checks, merges, the commit).
