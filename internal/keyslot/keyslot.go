// Package keyslot computes Redis Cluster hash slots.
//
// The algorithm is the one described in the Redis Cluster specification:
// CRC16 (XMODEM variant) of the key, or of its hash tag, modulo 16384.
package keyslot

// NumSlots is the number of hash slots in a Redis Cluster.
const NumSlots = 16384

var crcTable [256]uint16

func init() {
	for i := 0; i < 256; i++ {
		crc := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		crcTable[i] = crc
	}
}

// CRC16 returns the CRC16-XMODEM checksum (polynomial 0x1021, initial value
// 0, no reflection, no final XOR) of s, as used by Redis Cluster.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// HashTag returns the part of key that Redis Cluster hashes: the bytes
// between the first '{' and the first '}' after it when that span is
// non-empty, otherwise the whole key.
func HashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j == i+1 {
						return key
					}
					return key[i+1 : j]
				}
			}
			return key
		}
	}
	return key
}

// Slot returns the Redis Cluster hash slot (0..16383) of key, honouring
// hash tags.
func Slot(key string) uint16 {
	return CRC16(HashTag(key)) % NumSlots
}
