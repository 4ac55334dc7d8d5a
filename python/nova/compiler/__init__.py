"""The compiler side of Nova: locating and driving the C++ tools."""
