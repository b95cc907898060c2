"""tidu_compile.tools"""
