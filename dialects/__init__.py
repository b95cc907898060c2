"""tidu_compile.dialects"""
