"""The body: skeleton format, built-in human model, kinematics, dynamics, inverse kinematics."""
