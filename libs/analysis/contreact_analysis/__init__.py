"""ContReAct analysis: what a researcher does with finished runs.

Everything here reads what the platform recorded (run logs, archives, assessment
streams) through the same fold the platform uses, and computes its statistics with
maintained libraries (scipy, statsmodels, pingouin, krippendorff), never hand-rolled
formulas.
"""
