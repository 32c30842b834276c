"""One module per stage of an evaluation: kinematics, assembly, iteration matrix, friction, CHOLMOD."""
